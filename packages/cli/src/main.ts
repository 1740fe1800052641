import { redactUrl } from '@holdfast/core';
import { COMMAND_HELP } from './command-help.js';
import { demo } from './demo.js';
import { failureText } from './failure-text.js';
import { inspect } from './inspect.js';
import { list } from './list.js';
import { release } from './release.js';
import { run } from './run.js';
import { EXIT, exitCodeFor, USAGE, UsageError } from './usage.js';
import { VERSION } from './version.js';
import { watch } from './watch.js';

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = { demo, run, inspect, list, watch, release };

/** Runs the CLI and returns its exit code. Errors are one line on stderr, never a stack trace. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version' || name === '-V') {
    console.log(VERSION);
    return EXIT.ok;
  }
  const command = COMMANDS[name];
  try {
    if (!command) throw new UsageError(`unknown command "${name}"`);
    if (wantsHelp(args)) {
      console.log(COMMAND_HELP[name]);
      return EXIT.ok;
    }
    return await command(args);
  } catch (error) {
    const code = exitCodeFor(error);
    const message = redactUrl(failureText(error));
    console.error(code === EXIT.usage ? `holdfast: ${message}\n\n${USAGE}` : `holdfast: ${message}`);
    return code;
  }
}

/** `--help` before the `--` that starts a command's own arguments. */
function wantsHelp(args: string[]): boolean {
  const own = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
  return own.includes('--help') || own.includes('-h');
}
