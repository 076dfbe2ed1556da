import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { BrokerLeaderElection, BrokerLogger } from '../broker/broker-options.js';
import type { IdentityProvider } from '../broker/identity.js';
import type { OidcSignIn } from '../broker/oidc-sign-in.js';
import type { SessionEnds } from '../session-ends/session-ends.js';
import { durationSchema } from '../validate.js';
import {
  booleanFlag,
  type CommandInput,
  type CommandSpec,
  clusterOptions,
  requiredFlag,
  stringFlag,
} from './command-spec.js';
import { formatJsonLogLine } from './json-log-line.js';
import type { Terminal } from './terminal.js';
import { UsageError } from './usage-error.js';

// The package names itself, so the built page is found wherever the bundler put this code.
function desktopsPageFolder(): string {
  const manifest = createRequire(import.meta.url).resolve('@corral/vdi/package.json');
  return join(dirname(manifest), 'dist', 'ui');
}

async function identityFrom(
  header: string,
  proxies: string | undefined,
  groupsHeader: string | undefined,
): Promise<IdentityProvider> {
  const { authGatewayIdentity, tailscaleIdentity, tailscaleLoginHeader } = await import(
    '../broker/identity.js'
  );
  const trustedProxies = proxies
    ?.split(',')
    .map((proxy) => proxy.trim())
    .filter((proxy) => proxy !== '');
  const tailscale = header.toLowerCase() === tailscaleLoginHeader.toLowerCase();
  if (tailscale && trustedProxies === undefined && groupsHeader === undefined) {
    return tailscaleIdentity({ trustHeaders: true });
  }
  return authGatewayIdentity({
    header,
    ...(trustedProxies === undefined ? {} : { trustedProxies }),
    ...(groupsHeader === undefined ? {} : { groupsHeader }),
  });
}

// The text of a file a flag names, such as a mounted Secret's key, without its final newline.
function flagFile(flag: string, path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (error) {
    throw new UsageError(`--${flag}: cannot read ${path}: ${(error as Error).message}`, serve.words);
  }
}

function secretFile(input: CommandInput, flag: string): string | undefined {
  const path = stringFlag(input, flag);
  return path === undefined ? undefined : flagFile(flag, path);
}

/** The issuer's CA bundle, from --oidc-ca-file or CORRAL_OIDC_CA_FILE. */
function issuerCaFrom(input: CommandInput): { issuerCa?: string } {
  const path = stringFlag(input, 'oidc-ca-file') ?? (input.env.CORRAL_OIDC_CA_FILE?.trim() || undefined);
  return path === undefined ? {} : { issuerCa: flagFile('oidc-ca-file', path) };
}

/** The OIDC sign-in the --oidc-* flags ask for; the redirect URL defaults to the broker's own listen address. */
async function signInFrom(
  input: CommandInput,
  issuer: string,
  listen: string,
  sessionEnds: SessionEnds,
): Promise<{ signIn: OidcSignIn; sealedPerProcess: boolean }> {
  const clientId = requiredFlag(input, serve, 'oidc-client-id');
  const { parseListenAddress } = await import('../broker/serve.js');
  const { host, port } = parseListenAddress(listen);
  const redirectUrl = stringFlag(input, 'oidc-redirect-url') ?? `http://${host}:${port}/auth/callback`;
  if (port === 0 && stringFlag(input, 'oidc-redirect-url') === undefined) {
    throw new UsageError('with --listen on port 0, give --oidc-redirect-url', serve.words);
  }
  const clientSecret = secretFile(input, 'oidc-client-secret-file');
  const sessionSecret = secretFile(input, 'oidc-session-key-file');
  const optional = (flag: string, key: string) => {
    const value = stringFlag(input, flag);
    return value === undefined ? {} : { [key]: value };
  };
  const { createOidcSignIn } = await import('../broker/oidc-sign-in.js');
  const signIn = await createOidcSignIn({
    issuer,
    clientId,
    redirectUrl,
    ...(clientSecret === undefined ? {} : { clientSecret }),
    ...(sessionSecret === undefined ? {} : { sessionSecret }),
    ...issuerCaFrom(input),
    sessionEnds,
    ...optional('oidc-audience', 'audience'),
    ...optional('oidc-groups-claim', 'groupsClaim'),
    ...optional('oidc-login-claim', 'loginClaim'),
  });
  return { signIn, sealedPerProcess: sessionSecret === undefined };
}

const leaderTimings = {
  'leader-lease-duration': 'leaseDurationMs',
  'leader-renew-deadline': 'renewDeadlineMs',
  'leader-retry-period': 'retryPeriodMs',
} as const;

const leaderElectValues: Record<string, boolean> = {
  '': false,
  '0': false,
  false: false,
  '1': true,
  true: true,
};

/** The leader election `--leader-elect` or `CORRAL_VDI_LEADER_ELECT=true` asks for, with its flags. */
function leaderElectionFrom(input: CommandInput): BrokerLeaderElection | undefined {
  const words = ['broker', 'serve'];
  const fromEnv = leaderElectValues[input.env.CORRAL_VDI_LEADER_ELECT?.trim().toLowerCase() ?? ''];
  if (fromEnv === undefined) {
    throw new UsageError(
      `CORRAL_VDI_LEADER_ELECT="${input.env.CORRAL_VDI_LEADER_ELECT}" is not valid: use true or false`,
      words,
    );
  }
  const namespace = stringFlag(input, 'leader-namespace');
  const timings: Partial<Record<(typeof leaderTimings)[keyof typeof leaderTimings], number>> = {};
  for (const [flag, field] of Object.entries(leaderTimings)) {
    const text = stringFlag(input, flag);
    if (text === undefined) continue;
    const parsed = durationSchema.safeParse(text);
    if (!parsed.success) throw new UsageError(`--${flag}: ${parsed.error.issues[0]?.message}`, words);
    timings[field] = parsed.data;
  }
  if (!booleanFlag(input, 'leader-elect') && !fromEnv) {
    if (namespace !== undefined || Object.keys(timings).length > 0) {
      throw new UsageError('the --leader-* settings need --leader-elect', words);
    }
    return undefined;
  }
  return { ...timings, ...(namespace === undefined ? {} : { namespace }) };
}

// Text keeps the lines as people read them; json writes one object per line for a log collector.
function loggerFor(format: string | undefined, terminal: Terminal): BrokerLogger {
  if (format === undefined || format === 'text') return (line) => terminal.note(line);
  if (format === 'json') return (line, fields) => terminal.note(formatJsonLogLine(line, fields, new Date()));
  throw new UsageError(`--log-format takes text or json, not "${format}"`, serve.words);
}

function durationFlag(input: CommandInput, flag: string, key: string): Record<string, number> {
  const text = stringFlag(input, flag);
  if (text === undefined) return {};
  const parsed = durationSchema.safeParse(text);
  if (!parsed.success)
    throw new UsageError(`--${flag}: ${parsed.error.issues[0]?.message}`, ['broker', 'serve']);
  return { [key]: parsed.data };
}

function limitFlag(input: CommandInput): { maxDesktopsPerUser?: number } {
  const text = stringFlag(input, 'max-desktops-per-user');
  if (text === undefined) return {};
  if (!/^\d+$/.test(text)) {
    throw new UsageError(`--max-desktops-per-user takes a whole number (0 for no limit), not "${text}"`, [
      'broker',
      'serve',
    ]);
  }
  return { maxDesktopsPerUser: Number(text) };
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
    'trust-groups-header': {
      type: 'string',
      value: 'NAME',
      help: "The request header that carries the caller's groups, comma-separated, set by the same proxy. Default X-Auth-Request-Groups (none with Tailscale-User-Login). Also CORRAL_TRUST_GROUPS_HEADER.",
    },
    'trusted-proxies': {
      type: 'string',
      value: 'ADDRS',
      help: 'Comma-separated proxy addresses; the header counts only on requests from them.',
    },
    'oidc-issuer': {
      type: 'string',
      value: 'URL',
      help: 'Sign users in with this OpenID Connect issuer instead of trusting a header: the Desktops page signs in with the code flow and PKCE, API callers send a bearer ID or access token.',
    },
    'oidc-client-id': {
      type: 'string',
      value: 'ID',
      help: "The broker's client ID at the issuer (with --oidc-issuer).",
    },
    'oidc-ca-file': {
      type: 'string',
      value: 'FILE',
      help: "A PEM file of the CA certificates that sign the issuer's https certificate, such as a company CA, trusted beside Node's own roots. Also CORRAL_OIDC_CA_FILE. An http issuer is allowed on loopback only.",
    },
    'oidc-client-secret-file': {
      type: 'string',
      value: 'FILE',
      help: 'A file holding the client secret, for a confidential client; without it the broker is a public client.',
    },
    'oidc-audience': {
      type: 'string',
      value: 'AUD',
      help: 'The audience a bearer token must name. Default: the client ID.',
    },
    'oidc-groups-claim': {
      type: 'string',
      value: 'CLAIM',
      help: "The token claim that lists the caller's groups. Default groups.",
    },
    'oidc-login-claim': {
      type: 'string',
      value: 'CLAIM',
      help: 'The token claim the login comes from. Default email (refused when email_verified is false).',
    },
    'oidc-redirect-url': {
      type: 'string',
      value: 'URL',
      help: 'Where the issuer sends browsers back: the URL browsers reach the broker at, with /auth/callback. Default http://<--listen>/auth/callback.',
    },
    'oidc-session-key-file': {
      type: 'string',
      value: 'FILE',
      help: 'A file holding the secret (32 characters or more) that seals the session cookies; replicas need the same one. Without it, sessions end when the process stops.',
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
    'reclaim-warning': {
      type: 'string',
      value: 'DURATION',
      help: 'Warn this long before a reclaim for the maximum session (default 5m; 0 none). Overrides CORRAL_VDI_RECLAIM_WARNING.',
    },
    'max-desktops-per-user': {
      type: 'string',
      value: 'N',
      help: 'Refuse a claim (409 USER_LIMIT_REACHED) to a user who holds N desktops in the namespace, in any pool (0: no limit, the default). A pool may set a lower one. Overrides CORRAL_MAX_DESKTOPS_PER_USER.',
    },
    'drain-delay': {
      type: 'string',
      value: 'DURATION',
      help: 'On SIGTERM, keep serving this long while /readyz fails, so requests still routed here are answered, then shut down (default 5s; 0 none). Overrides CORRAL_VDI_DRAIN_DELAY.',
    },
    ui: {
      type: 'boolean',
      help: 'Also serve the Desktops page at / (desktops, pools, consoles in the browser).',
    },
    'leader-elect': {
      type: 'boolean',
      help: 'Run as one of several replicas: only the holder of the leader Lease reclaims and renews. Also CORRAL_VDI_LEADER_ELECT=true.',
    },
    'leader-namespace': {
      type: 'string',
      value: 'NS',
      help: 'Where the leader Lease corral-broker-leader lives. Default: the first served namespace.',
    },
    'leader-lease-duration': {
      type: 'string',
      value: 'DURATION',
      help: 'How long followers wait for a silent leader before one takes over. Default 15s.',
    },
    'leader-renew-deadline': {
      type: 'string',
      value: 'DURATION',
      help: 'How long a leader goes on without renewing before it stops; below the lease duration. Default 10s.',
    },
    'leader-retry-period': {
      type: 'string',
      value: 'DURATION',
      help: 'Time between tries to acquire or renew the leader Lease. Default 2s.',
    },
    metrics: {
      type: 'boolean',
      help: 'Also serve the Prometheus metrics at /metrics on the same listener (anyone who reaches it may read them).',
    },
    'metrics-listen': {
      type: 'string',
      value: 'HOST:PORT',
      help: 'Serve the Prometheus metrics at /metrics, and /healthz and /readyz, on a listener of their own, such as 0.0.0.0:9090.',
    },
    'log-format': {
      type: 'string',
      value: 'text|json',
      help: 'How log lines are written to stderr: text (default) or json, one object per line with a request ID.',
    },
  },
  notes: [
    'The broker trusts the header only when every path to it goes through the proxy that sets it. Its settings ' +
      'come from the environment: CORRAL_VDI_BROKER=1 turns the broker on (otherwise every /api/vdi/ route answers ' +
      '404 and nothing renews or reclaims claims), CORRAL_VDI_NAMESPACES (default: the -n namespace), CORRAL_ADMINS, CORRAL_ADMIN_GROUPS, CORRAL_AUTH_REQUIRED, ' +
      'CORRAL_VDI_DISCONNECT_GRACE, CORRAL_VDI_MAX_SESSION, CORRAL_VDI_IDLE_TIMEOUT, CORRAL_VDI_IDLE_WARNING, CORRAL_VDI_RECLAIM_WARNING, ' +
      'CORRAL_MAX_DESKTOPS_PER_USER and CORRAL_VDI_DRAIN_DELAY. A ' +
      'desktop used only through a native client (no console through the broker) is never idle-reclaimed.',
    '/healthz and /readyz answer anyone, for the probes of the platform; /readyz fails as soon as a shutdown ' +
      'begins. On SIGTERM the broker goes on serving for the drain delay (each answer closing its connection), ' +
      'then, or at once on SIGINT, it closes the consoles (1001), lets running releases and requests finish for ' +
      'up to 20 s, stops the reclaim loop and exits 0.',
  ],
  examples: [
    '$ CORRAL_VDI_BROKER=1 CORRAL_ADMINS=alice@example.com corral-vdi broker serve --trust-header Tailscale-User-Login',
    '$ CORRAL_VDI_BROKER=1 corral-vdi broker serve --trust-header X-Auth-Request-Email --ui',
    '$ CORRAL_VDI_BROKER=1 corral-vdi broker serve --trust-header X-Auth-Request-Email --metrics-listen 0.0.0.0:9090 --log-format json',
    '$ CORRAL_VDI_BROKER=1 corral-vdi broker serve --ui --oidc-issuer https://login.example.com/realms/corp --oidc-client-id corral-vdi --oidc-session-key-file /etc/corral/session-key',
  ],
  async run(input) {
    const issuer = stringFlag(input, 'oidc-issuer');
    const header = stringFlag(input, 'trust-header');
    // before the cluster is asked
    if (issuer === undefined && header === undefined) {
      throw new UsageError('"broker serve" needs --trust-header NAME or --oidc-issuer URL', serve.words);
    }
    const headerFlag = ['trust-header', 'trust-groups-header', 'trusted-proxies'].find(
      (flag) => stringFlag(input, flag) !== undefined,
    );
    if (issuer !== undefined && headerFlag !== undefined) {
      throw new UsageError(`use either --${headerFlag} or --oidc-issuer, not both`, serve.words);
    }
    if (issuer !== undefined) requiredFlag(input, serve, 'oidc-client-id');
    const groupsHeader =
      stringFlag(input, 'trust-groups-header') ?? (input.env.CORRAL_TRUST_GROUPS_HEADER?.trim() || undefined);
    const leaderElection = leaderElectionFrom(input);
    const { terminal } = input;
    const log = loggerFor(stringFlag(input, 'log-format'), terminal);
    const session = await input.cluster();
    const { brokerOptionsFromEnv } = await import('../broker/broker-settings.js');
    const { serveBroker } = await import('../broker/serve.js');
    const settings = {
      ...brokerOptionsFromEnv(input.env),
      ...durationFlag(input, 'idle-timeout', 'idleTimeoutMs'),
      ...durationFlag(input, 'idle-warning', 'idleWarningMs'),
      ...durationFlag(input, 'reclaim-warning', 'reclaimWarningMs'),
      ...durationFlag(input, 'drain-delay', 'drainDelayMs'),
      ...limitFlag(input),
    };
    const namespaces = input.env.CORRAL_VDI_NAMESPACES?.trim() ? settings.namespaces : [session.namespace];
    const listen = stringFlag(input, 'listen');
    const metricsListen = stringFlag(input, 'metrics-listen');
    const ui = booleanFlag(input, 'ui');
    // sign-outs are kept in the first served namespace, whose Leases every replica caches
    const sessionsNamespace = namespaces[0] ?? session.namespace;
    const { createVdi } = await import('../vdi.js');
    const { MemoryAuditSink } = await import('../audit.js');
    const vdi = createVdi({
      kubeConfig: session.kubeConfig,
      namespace: sessionsNamespace,
      audit: new MemoryAuditSink(),
    });
    const { createSessionEnds } = await import('../session-ends/session-ends.js');
    const oidc =
      issuer === undefined
        ? undefined
        : await signInFrom(
            input,
            issuer,
            listen ?? '127.0.0.1:8080',
            createSessionEnds(vdi.context, sessionsNamespace),
          );
    if (oidc?.sealedPerProcess) {
      log(
        'broker: no --oidc-session-key-file, so this process seals sessions with a key of its own: they end when it stops, and replicas do not share them.',
      );
    }
    const server = await serveBroker({
      ...settings,
      namespaces,
      vdi,
      identity: [
        oidc
          ? oidc.signIn.identity
          : await identityFrom(
              requiredFlag(input, serve, 'trust-header'),
              stringFlag(input, 'trusted-proxies'),
              groupsHeader,
            ),
      ],
      ...(oidc ? { signIn: oidc.signIn } : {}),
      log,
      metrics: booleanFlag(input, 'metrics'),
      ...(metricsListen === undefined ? {} : { metricsListen }),
      ...(listen === undefined ? {} : { listen }),
      ...(ui ? { desktopsPage: desktopsPageFolder() } : {}),
      ...(leaderElection === undefined ? {} : { leaderElection }),
    });
    const { leader } = server.broker;
    const election = leader && {
      identity: leader.identity,
      lease: `${leader.namespace}/${leader.leaseName}`,
    };
    if (terminal.json)
      terminal.printJson({
        url: server.url,
        ...(server.metricsUrl ? { metricsUrl: server.metricsUrl } : {}),
        enabled: settings.enabled,
        namespaces,
        ...(header === undefined ? {} : { trustHeader: header }),
        ...(oidc ? { oidcIssuer: oidc.signIn.issuer } : {}),
        ...(election ? { leaderElection: election } : {}),
      });
    else {
      terminal.print(
        `broker listening on ${server.url} (namespaces ${namespaces.join(', ')}; ${oidc ? `sign-in at ${oidc.signIn.issuer}` : `login from header ${header}`})`,
      );
      if (election) {
        terminal.print(`leader election as ${election.identity} on Lease ${election.lease}`);
      }
      if (ui) terminal.print(`Desktops page: ${server.url}/`);
      if (server.metricsUrl) terminal.print(`metrics: ${server.metricsUrl}/metrics`);
    }
    await server.closed;
    return 0;
  },
};

const endSessions: CommandSpec = {
  words: ['broker', 'end-sessions'],
  summary:
    "End every session of a user at the broker's own sign-in (--oidc-issuer), in every browser and on every replica.",
  args: ['login'],
  options: { ...clusterOptions },
  notes: [
    'Give the namespace the brokers keep sign-outs in: the first of their served namespaces (-n or CORRAL_VDI_NAMESPACES). ' +
      'The brokers refuse the sessions within seconds; the user signs in at the issuer again, and can do so at once. ' +
      "It writes the Lease corral-sessions-<hash of the login> there (get, create and update on Leases); it ends no claim: release the user's desktops with unassign.",
  ],
  examples: ['$ corral-vdi broker end-sessions alice@example.com -n corral-vms'],
  async run(input) {
    const login = input.args.login ?? '';
    const session = await input.cluster();
    const { createSessionEnds } = await import('../session-ends/session-ends.js');
    const endedAt = new Date();
    await createSessionEnds(session.vdi.context, session.namespace).end(login, endedAt);
    const { terminal } = input;
    if (terminal.json)
      terminal.printJson({ login, namespace: session.namespace, endedAt: endedAt.toISOString() });
    else terminal.print(`ended the sessions of ${login} signed in before ${endedAt.toISOString()}`);
    return 0;
  },
};

/** `broker serve` and `broker end-sessions`. */
export const brokerCommands: readonly CommandSpec[] = [serve, endSessions];
