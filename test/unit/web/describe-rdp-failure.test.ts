import { describe, expect, it } from 'vitest';
import { describeRdpFailure, readRdpFailure } from '../../../src/web/describe-rdp-failure.js';

/** An `IronError` as IronRDP's WASM throws it: methods, not fields. */
const ironError = (
  kind: number,
  backtrace: string,
  details?: { httpStatusCode?: number; wsaErrorCode?: number; tlsAlertCode?: number },
) => ({ kind: () => kind, backtrace: () => backtrace, rdcleanpathDetails: () => details });

const describeThrown = (thrown: unknown, withLogin = true) =>
  describeRdpFailure(readRdpFailure(thrown, withLogin));

describe('a failed RDP connect in words', () => {
  it('names the login as the likely cause of the generic read error a wrong NLA password ends with', () => {
    const failure = describeThrown(ironError(0, 'CredSSP: read error: unexpected EOF\n  at …'));
    expect(failure.cause).toBe('login');
    expect(failure.words).toMatch(/wrong user name or password is the likely cause/);
    // without a login there was no NLA exchange to blame
    expect(describeThrown(ironError(0, 'read error: unexpected EOF'), false)).toEqual({
      cause: 'unknown',
      words: 'The RDP connection failed: read error: unexpected EOF.',
    });
  });

  it('words the logon failures IronRDP names', () => {
    expect(describeThrown(ironError(1, 'wrong password')).cause).toBe('login');
    expect(describeThrown(ironError(2, 'logon failure')).cause).toBe('login');
    expect(describeThrown(ironError(3, 'access denied')).words).toMatch(
      /may not sign in over Remote Desktop/,
    );
  });

  it("tells the guest's refusals from the broker's", () => {
    expect(describeThrown(ironError(4, 'x', { wsaErrorCode: 10061 }))).toEqual({
      cause: 'guest',
      words:
        'The desktop refused the connection on its RDP port: no RDP server is listening there (socket error 10061).',
    });
    expect(describeThrown(ironError(4, 'x', { wsaErrorCode: 10060 })).words).toMatch(
      /did not answer .* in time/,
    );
    expect(describeThrown(ironError(4, 'x', { tlsAlertCode: 40 })).words).toMatch(/TLS alert 40/);
    expect(describeThrown(ironError(6, 'server refused: SSL required by server\nmore'))).toEqual({
      cause: 'guest',
      words:
        'The desktop refused the security the page asked of its RDP server: server refused: SSL required by server.',
    });
    expect(describeThrown(ironError(4, 'x', { httpStatusCode: 403 }))).toEqual({
      cause: 'broker',
      words:
        'The broker refused the RDP connection (HTTP 403): you may not open the consoles of this desktop.',
    });
    expect(describeThrown(ironError(4, 'x', { httpStatusCode: 401 })).words).toMatch(/one-time RDP ticket/);
    expect(describeThrown(ironError(5, 'websocket closed')).cause).toBe('network');
  });

  it('reads what is not an IronError as its message', () => {
    expect(describeThrown(new Error('WebAssembly.instantiate(): refused by CSP'), false)).toEqual({
      cause: 'unknown',
      words: 'The RDP connection failed: WebAssembly.instantiate(): refused by CSP.',
    });
  });
});
