/** What IronRDP tells of a failed connect: `IronError.kind()` and, for a proxy refusal, the RDCleanPath details. */
export interface RdpFailureFacts {
  /** `IronErrorKind`: 0 general, 1 wrong password, 2 logon failure, 3 access denied, 4 RDCleanPath, 5 proxy connect, 6 negotiation failure. */
  kind: number | undefined;
  /** IronRDP's own text of the error. */
  detail: string;
  httpStatusCode?: number | undefined;
  wsaErrorCode?: number | undefined;
  tlsAlertCode?: number | undefined;
  /** Whether the page sent a login, so that an NLA exchange was under way. */
  withLogin: boolean;
}

/** A failed RDP connect in words, and who refused: the login, the guest, the broker or the page's link to it. */
export interface RdpFailure {
  cause: 'login' | 'guest' | 'broker' | 'network' | 'unknown';
  words: string;
}

const ironErrorKinds = {
  general: 0,
  wrongPassword: 1,
  logonFailure: 2,
  accessDenied: 3,
  rdCleanPath: 4,
  proxyConnect: 5,
  negotiationFailure: 6,
} as const;

// Windows socket errors the broker reports for its connection to the guest (RDCleanPath's wsa_last_error).
const socketErrors: Readonly<Record<number, string>> = {
  10060: 'did not answer on its RDP port in time',
  10061: 'refused the connection on its RDP port: no RDP server is listening there',
  10065: 'cannot be reached from the broker',
};

const brokerRefusals: Readonly<Record<number, string>> = {
  401: 'its one-time RDP ticket was not accepted (expired, used, or for another session); connect again',
  403: 'you may not open the consoles of this desktop',
  404: 'the desktop no longer runs or is no longer yours',
};

/** Reads the facts of what `connect()` of IronRDP rejected with: an `IronError`, or anything else. */
export function readRdpFailure(thrown: unknown, withLogin: boolean): RdpFailureFacts {
  const error = thrown as {
    kind?: () => number;
    backtrace?: () => string;
    rdcleanpathDetails?: () =>
      | { httpStatusCode?: number; wsaErrorCode?: number; tlsAlertCode?: number }
      | undefined;
  };
  if (typeof error?.kind !== 'function') {
    return { kind: undefined, detail: thrown instanceof Error ? thrown.message : String(thrown), withLogin };
  }
  const details = error.rdcleanpathDetails?.();
  return {
    kind: error.kind(),
    detail: error.backtrace?.() ?? '',
    httpStatusCode: details?.httpStatusCode,
    wsaErrorCode: details?.wsaErrorCode,
    tlsAlertCode: details?.tlsAlertCode,
    withLogin,
  };
}

// IronRDP's text can run to a backtrace; its first line says what failed.
const firstLine = (text: string) => text.split('\n')[0]?.trim().slice(0, 200) ?? '';

/**
 * A failed RDP connect in words. A wrong NLA password reaches IronRDP only as a generic read error when the
 * guest drops the connection, so a general failure during a login is worded as the login's.
 */
export function describeRdpFailure(facts: RdpFailureFacts): RdpFailure {
  const { kind } = facts;
  if (kind === ironErrorKinds.wrongPassword || kind === ironErrorKinds.logonFailure) {
    return {
      cause: 'login',
      words: 'The desktop refused the login: check the user name and the password, then connect again.',
    };
  }
  if (kind === ironErrorKinds.accessDenied) {
    return {
      cause: 'login',
      words: 'The desktop refused the login: this account may not sign in over Remote Desktop.',
    };
  }
  if (kind === ironErrorKinds.rdCleanPath) {
    if (facts.wsaErrorCode !== undefined) {
      const what = socketErrors[facts.wsaErrorCode] ?? 'could not be reached on its RDP port';
      return { cause: 'guest', words: `The desktop ${what} (socket error ${facts.wsaErrorCode}).` };
    }
    if (facts.tlsAlertCode !== undefined) {
      return {
        cause: 'guest',
        words: `The desktop refused the TLS handshake of its RDP server (TLS alert ${facts.tlsAlertCode}).`,
      };
    }
    if (facts.httpStatusCode !== undefined) {
      const why = brokerRefusals[facts.httpStatusCode] ?? firstLine(facts.detail);
      return {
        cause: 'broker',
        words: `The broker refused the RDP connection (HTTP ${facts.httpStatusCode}): ${why}.`,
      };
    }
  }
  if (kind === ironErrorKinds.negotiationFailure) {
    return {
      cause: 'guest',
      words: `The desktop refused the security the page asked of its RDP server: ${firstLine(facts.detail)}.`,
    };
  }
  if (kind === ironErrorKinds.proxyConnect) {
    return {
      cause: 'network',
      words:
        "The page could not open the broker's RDP relay: check the connection to the broker, then connect again.",
    };
  }
  if (kind === ironErrorKinds.general && facts.withLogin) {
    return {
      cause: 'login',
      words:
        'The desktop ended the connection during the login: a wrong user name or password is the likely cause. Check them and connect again.',
    };
  }
  return {
    cause: 'unknown',
    words: `The RDP connection failed: ${firstLine(facts.detail) || 'no reason given'}.`,
  };
}
