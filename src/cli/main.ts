import { enableCompileCache } from 'node:module';

// V8 keeps the compiled code of the CLI and its dependencies on disk, so every run after the first starts sooner
enableCompileCache();
const { runCli } = await import('./run-cli.js');

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
