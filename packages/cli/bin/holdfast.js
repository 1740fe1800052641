#!/usr/bin/env node
// A source file, not build output: npm links this bin at install time, before the build has run,
// so `npx holdfast` works right after `npm install` (it needs the build only when it runs).
let main;
try {
  ({ main } = await import('../dist/main.js'));
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist')) throw error;
  console.error('holdfast: the CLI is not built yet; run `npm run build` in the Holdfast checkout');
  process.exit(70);
}
process.exitCode = await main(process.argv.slice(2));
