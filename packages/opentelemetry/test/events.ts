import { subscribe, unsubscribe } from 'node:diagnostics_channel';

/** The next message published on a diagnostics channel (bound it with `within`). */
export function nextEvent(name: string): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const listener = (message: unknown): void => {
      unsubscribe(name, listener);
      resolve(message as Record<string, unknown>);
    };
    subscribe(name, listener);
  });
}
