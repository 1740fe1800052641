export { ipCommand, listNamespaces, namespaceSupportProblem } from './ip.js';
export { removeLeftovers } from './leftovers.js';
export { NetworkRig } from './network.js';
export { listenIn, tcpProbe } from './tcp-probe.js';
