import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { IdentityProvider } from '../broker/identity.js';
import { durationSchema } from '../validate.js';
import {
  booleanFlag,
  type CommandInput,
  type CommandSpec,
  clusterOptions,
  requiredFlag,
  stringFlag,
} from './command-spec.js';
import { UsageError } from './usage-error.js';

// The package names itself, so the built page is found wherever the bundler put this code.
function desktopsPageFolder(): string {
  const manifest = createRequire(import.meta.url).resolve('@corral/vdi/package.json');
  return join(dirname(manifest), 'dist', 'ui');
}

async function identityFrom(header: string, proxies: string | undefined): Promise<IdentityProvider> {
  const { authGatewayIdentity, tailscaleIdentity, tailscaleLoginHeader } = await import(
    '../broker/identity.js'
  );
  const trustedProxies = proxies
    ?.split(',')
    .map((proxy) => proxy.trim())
    .filter((proxy) => proxy !== '');
  if (header.toLowerCase() === tailscaleLoginHeader.toLowerCase() && trustedProxies === undefined) {
    return tailscaleIdentity({ trustHeaders: true });
  }
  return authGatewayIdentity({ header, ...(trustedProxies === undefined ? {} : { trustedProxies }) });
}

function durationFlag(input: CommandInput, flag: string, key: string): Record<string, number> {
  const text = stringFlag(input, flag);
  if (text === undefined) return {};
  const parsed = durationSchema.safeParse(text);
  if (!parsed.success)
    throw new UsageError(`--${flag}: ${parsed.error.issues[0]?.message}`, ['broker', 'serve']);
  return { [key]: parsed.data };
}

const serve: CommandSpec = {
  words: ['broker', 'serve'],
  summary:
    'Run the self-service broker (the /api/vdi HTTP API and the reclaim policy) until Ctrl-C or SIGTERM.',
  args: [],
  options: {
    ...clusterOptions,
    listen: {
      type: 'string',
      value: 'HOST:PORT',
      help: 'Where to listen. Default 127.0.0.1:8080; keep it behind the identity proxy.',
    },
    'trust-header': {
      type: 'string',
      value: 'NAME',
      help: "The request header that carries the caller's login, set by the proxy in front (Tailscale-User-Login, X-Auth-Request-Email).",
    },
    'trusted-proxies': {
      type: 'string',
      value: 'ADDRS',
      help: 'Comma-separated proxy addresses; the header counts only on requests from them.',
    },
    'idle-timeout': {
      type: 'string',
      value: 'DURATION',
      help: 'Reclaim a desktop whose broker consoles carried no key, pointer or terminal input this long (30m; 0 off). Overrides CORRAL_VDI_IDLE_TIMEOUT.',
    },
    'idle-warning': {
      type: 'string',
      value: 'DURATION',
      help: 'Warn this long before an idle reclaim (default 5m). Overrides CORRAL_VDI_IDLE_WARNING.',
    },
    ui: {
      type: 'boolean',
      help: 'Also serve the Desktops page at / (desktops, pools, consoles in the browser).',
    },
  },
  notes: [
    'The broker trusts the header only when every path to it goes through the proxy that sets it. Its settings ' +
      'come from the environment: CORRAL_VDI_BROKER=1 turns the API on (otherwise every /api/vdi/ route answers ' +
      '404), CORRAL_VDI_NAMESPACES (default: the -n namespace), CORRAL_ADMINS, CORRAL_AUTH_REQUIRED, ' +
      'CORRAL_VDI_DISCONNECT_GRACE, CORRAL_VDI_MAX_SESSION, CORRAL_VDI_IDLE_TIMEOUT and CORRAL_VDI_IDLE_WARNING. A ' +
      'desktop used only through a native client (no console through the broker) is never idle-reclaimed.',
  ],
  examples: [
    '$ CORRAL_VDI_BROKER=1 CORRAL_ADMINS=alice@example.com corral-vdi broker serve --trust-header Tailscale-User-Login',
    '$ CORRAL_VDI_BROKER=1 corral-vdi broker serve --trust-header X-Auth-Request-Email --ui',
  ],
  async run(input) {
    const header = requiredFlag(input, serve, 'trust-header');
    const session = await input.cluster();
    const { brokerOptionsFromEnv } = await import('../broker/broker-settings.js');
    const { serveBroker } = await import('../broker/serve.js');
    const settings = {
      ...brokerOptionsFromEnv(input.env),
      ...durationFlag(input, 'idle-timeout', 'idleTimeoutMs'),
      ...durationFlag(input, 'idle-warning', 'idleWarningMs'),
    };
    const namespaces = input.env.CORRAL_VDI_NAMESPACES?.trim() ? settings.namespaces : [session.namespace];
    const listen = stringFlag(input, 'listen');
    const { terminal } = input;
    const ui = booleanFlag(input, 'ui');
    const server = await serveBroker({
      ...settings,
      namespaces,
      kubeConfig: session.kubeConfig,
      identity: [await identityFrom(header, stringFlag(input, 'trusted-proxies'))],
      log: (line) => terminal.note(line),
      ...(listen === undefined ? {} : { listen }),
      ...(ui ? { desktopsPage: desktopsPageFolder() } : {}),
    });
    if (terminal.json)
      terminal.printJson({ url: server.url, enabled: settings.enabled, namespaces, trustHeader: header });
    else {
      terminal.print(
        `broker listening on ${server.url} (namespaces ${namespaces.join(', ')}; login from header ${header})`,
      );
      if (ui) terminal.print(`Desktops page: ${server.url}/`);
    }
    if (!settings.enabled)
      terminal.note('warning: CORRAL_VDI_BROKER is not 1, so every /api/vdi/ route answers 404');
    await server.closed;
    return 0;
  },
};

/** `broker serve`. */
export const brokerCommands: readonly CommandSpec[] = [serve];
