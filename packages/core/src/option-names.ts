import { InvalidArgumentError } from './errors.js';

export interface OptionNames {
  /** The backend, for messages: "Redis", "Consul", "MongoDB". */
  readonly backend: string;
  readonly known: readonly string[];
  /** Old name -> new name: refused by name, so that a setting is never silently ignored. */
  readonly renamed?: Readonly<Record<string, string>>;
  /** Prefix of the argument in messages, e.g. "adapter.". */
  readonly where?: string;
}

/** InvalidArgumentError for the first old or unknown option name: adapters honour an option or refuse it. */
export function checkOptionNames(names: readonly string[], { backend, known, renamed = {}, where = '' }: OptionNames): void {
  for (const name of names) {
    const newName = renamed[name];
    if (newName !== undefined) throw new InvalidArgumentError(where + name, `${name} was renamed ${newName}`);
    if (!known.includes(name)) {
      throw new InvalidArgumentError(
        where + name,
        `not a ${backend} option; expected one of ${known.join(', ')} (unknown ${backend} option names are refused; see docs/options.md)`,
      );
    }
  }
}
