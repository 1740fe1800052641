import { parseDuration } from './duration.js';
import { InvalidArgumentError } from './errors.js';
import { redactUrl } from './registry.js';
import { checkTimerRange } from './timer-range.js';

/** How the text of one of an adapter's URL parameters becomes a setting. */
export type UrlParameterKind = 'text' | 'boolean' | 'duration';

export interface AdapterUrlSpec {
  /** Accepted schemes, e.g. `['mysql:']`. */
  readonly schemes: readonly string[];
  /** Shown when the text is no URL, e.g. `mysql://user@host:3306/db`. */
  readonly example: string;
  /** The adapter's own parameters: URL name -> [setting name, kind]. Durations take units ("250ms", "2s"), at most MAX_TIMER_MS. */
  readonly own: Readonly<Record<string, readonly [setting: string, kind: UrlParameterKind]>>;
  /** The driver's parameters, left in the URL for the driver; any other parameter is refused. */
  readonly driver: { readonly name: string; readonly parameters: ReadonlySet<string> };
}

/**
 * An adapter's URL, parsed: the URL without the adapter's own parameters (for the driver) and those
 * parameters as settings. A parameter that is neither the adapter's nor the driver's is an
 * InvalidArgumentError, never silently dropped; messages never show the password.
 */
export function adapterUrl(input: string | URL, spec: AdapterUrlSpec): { url: URL; settings: Record<string, string | boolean | number> } {
  const url = parsed(input, spec.example);
  if (!spec.schemes.includes(url.protocol)) {
    throw new InvalidArgumentError('url', `expected ${spec.schemes.join(' or ')}, got "${url.protocol}"`);
  }
  // Port 0 is no server: some drivers read it as "not given" and connect to their default port.
  if (url.port === '0') throw new InvalidArgumentError('url', `port 0 is no server's port (expected ${spec.example})`);
  const settings: Record<string, string | boolean | number> = {};
  for (const name of [...new Set(url.searchParams.keys())]) {
    // Drivers keep the first or the last of a repeated parameter, each its own way: neither is what was meant.
    if (url.searchParams.getAll(name).length > 1) throw new InvalidArgumentError('url', `parameter "${name}" is given more than once`);
    if (spec.driver.parameters.has(name)) continue;
    const own = spec.own[name];
    if (!own) {
      const known = `the adapter's are ${Object.keys(spec.own).join(', ')}, ${spec.driver.name}'s ${[...spec.driver.parameters].join(', ')}`;
      throw new InvalidArgumentError('url', `unknown parameter "${name}"; ${known}`);
    }
    settings[own[0]] = parameter(name, url.searchParams.get(name)!, own[1]);
    url.searchParams.delete(name);
  }
  return { url, settings };
}

function parameter(name: string, value: string, kind: UrlParameterKind): string | boolean | number {
  // Every duration parameter is a bound or an interval, none "unlimited": refused at 0 (as the same
  // options are: a poll interval of 0 is a busy loop, a connect timeout of 0 no bound) and above the timer range.
  if (kind === 'duration') {
    const ms = parseDuration(value, `url ${name}`);
    if (ms <= 0) throw new InvalidArgumentError('url', `${name} must be a positive duration, got "${value}"`);
    return checkTimerRange(`url ${name}`, ms);
  }
  if (kind === 'text') return value;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new InvalidArgumentError('url', `${name} must be true or false, got "${value}"`);
}

function parsed(input: string | URL, example: string): URL {
  if (input instanceof URL) return new URL(input.href);
  try {
    return new URL(input);
  } catch {
    throw new InvalidArgumentError('url', `"${redactUrl(String(input))}" is not a valid URL (expected ${example})`);
  }
}
