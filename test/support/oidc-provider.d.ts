// The part of oidc-provider (which ships no types) the local issuer uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface Account {
    accountId: string;
    claims(): Record<string, unknown> | Promise<Record<string, unknown>>;
  }

  export interface Configuration {
    clients?: Array<Record<string, unknown>>;
    jwks?: { keys: Array<Record<string, unknown>> };
    findAccount?: (context: unknown, id: string) => Account | undefined | Promise<Account | undefined>;
    claims?: Record<string, string[]>;
    cookies?: { keys: string[] };
    pkce?: { required: () => boolean };
    features?: Record<string, unknown>;
    [setting: string]: unknown;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
}
