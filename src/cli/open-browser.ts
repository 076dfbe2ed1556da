import { spawn } from 'node:child_process';

/** The commands that may open a URL here: `$BROWSER` (a `:`-separated list, `%s` for the URL) first. */
function browserCommands(env: Readonly<Record<string, string | undefined>>): string[][] {
  const fromEnv = (env.BROWSER ?? '')
    .split(':')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => entry.split(/\s+/));
  if (fromEnv.length > 0) return fromEnv;
  if (process.platform === 'darwin') return [['open']];
  if (process.platform === 'win32') return [['explorer.exe']];
  return [['xdg-open'], ['sensible-browser']];
}

// Started is enough: a browser may run for hours, and xdg-open hands over and exits.
function start(argv: string[]): Promise<boolean> {
  const [program, ...args] = argv;
  if (program === undefined) return Promise.resolve(false);
  return new Promise((resolve) => {
    const child = spawn(program, args, { stdio: 'ignore', detached: true });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}

/**
 * Opens `url` in the user's browser: each `$BROWSER` command in turn (the URL replaces `%s`, or is added), else
 * the desktop's opener. Resolves `false` when none could start, so the caller can print the URL instead.
 */
export async function openBrowser(
  url: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<boolean> {
  for (const command of browserCommands(env)) {
    const argv = command.some((part) => part.includes('%s'))
      ? command.map((part) => part.replaceAll('%s', url))
      : [...command, url];
    if (await start(argv)) return true;
  }
  return false;
}
