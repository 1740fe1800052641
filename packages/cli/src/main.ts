import { isHoldfastError } from '@holdfast/core';
import { demo } from './demo.js';
import { inspect } from './inspect.js';
import { run } from './run.js';
import { EXIT, USAGE, UsageError } from './usage.js';

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = { demo, run, inspect };

/** Runs the CLI and returns its exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name === undefined ? EXIT.usage : 0;
  }
  const command = COMMANDS[name];
  try {
    if (!command) throw new UsageError(`unknown command "${name}"`);
    return await command(args);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`holdfast: ${error.message}\n\n${USAGE}`);
      return EXIT.usage;
    }
    if (isHoldfastError(error)) {
      console.error(`holdfast: ${error.message}`);
      return EXIT.backendFailed;
    }
    throw error;
  }
}
