import { type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';

/** Only signatures by a key pair: `none` proves nothing, and an HS* key would be the client secret. */
export const acceptedTokenAlgorithms = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

/** How far the broker's clock and the issuer's may disagree on `exp`, `nbf` and `iat`, in seconds. */
export const tokenClockToleranceSeconds = 30;

/** What a token must satisfy besides its signature. */
export interface TokenExpectations {
  issuer: string;
  audience: string;
  loginClaim: string;
  groupsClaim: string;
}

/** A verified caller, or why not, in words that say what to do next. */
export type TokenIdentity = { login: string; groups: string[] } | { refused: string };

/**
 * The login and groups of verified claims: the login claim must be a string (an `email` the issuer says is not
 * verified is refused), and the groups claim, when present, a list of strings.
 */
export function identityOfClaims(claims: JWTPayload, expected: TokenExpectations): TokenIdentity {
  const login = claims[expected.loginClaim];
  if (typeof login !== 'string') {
    return {
      refused: `The token has no "${expected.loginClaim}" claim to take the login from; ask the issuer to include it (for "email", the scope email).`,
    };
  }
  if (expected.loginClaim === 'email' && claims.email_verified === false) {
    return {
      refused: `The issuer says the email ${login} is not verified; verify it at the issuer and sign in again.`,
    };
  }
  const groups = claims[expected.groupsClaim] ?? [];
  if (!Array.isArray(groups) || !groups.every((group) => typeof group === 'string')) {
    return {
      refused: `The token's "${expected.groupsClaim}" claim is not a list of group names; fix the issuer's groups mapping.`,
    };
  }
  return { login, groups };
}

// Why jose refused a token, in words; `undefined` for a failure that is not the token's (the issuer unreachable).
function describeRefusal(error: unknown, expected: TokenExpectations): string | undefined {
  const { code, claim, reason, payload } = error as {
    code?: string;
    claim?: string;
    reason?: string;
    payload?: JWTPayload;
  };
  const again = 'get a new token from the issuer';
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return `The bearer token expired at ${new Date((payload?.exp ?? 0) * 1000).toISOString()}; ${again}.`;
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (claim === 'aud')
        return `The bearer token is for another audience (${JSON.stringify(payload?.aud ?? null)}), not this broker's "${expected.audience}"; ask the issuer for a token for ${expected.audience}.`;
      if (claim === 'iss')
        return `The bearer token is from another issuer (${JSON.stringify(payload?.iss ?? null)}); this broker trusts ${expected.issuer} only.`;
      if (claim === 'nbf') return `The bearer token is not valid yet; check the clocks, or ${again}.`;
      return `The bearer token's "${claim}" claim is ${reason === 'missing' ? 'missing' : 'not valid'}; ${again}.`;
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return `The bearer token is not signed with a key pair (RS*, PS*, ES*, EdDSA); the broker refuses "none" and shared-secret signatures; ${again}.`;
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return `The bearer token is signed by a key ${expected.issuer} does not publish; ${again}.`;
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return `The bearer token's signature does not verify; ${again}.`;
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return `The bearer token is not a signed JWT the broker can read; send the issuer's ID or access token.`;
    default:
      return undefined;
  }
}

/**
 * Verifies a bearer token against the issuer's keys: an asymmetric signature by a key of its JWKS, the issuer,
 * the audience, `exp` (required) and `nbf` with {@link tokenClockToleranceSeconds} of skew; then reads the login
 * and groups.
 *
 * @throws what `keys` throws when the issuer's keys cannot be fetched: that is no fault of the token.
 */
export async function verifyBearerToken(
  token: string,
  keys: JWTVerifyGetKey,
  expected: TokenExpectations,
  now: Date,
): Promise<TokenIdentity> {
  try {
    const { payload } = await jwtVerify(token, keys, {
      issuer: expected.issuer,
      audience: expected.audience,
      algorithms: acceptedTokenAlgorithms,
      clockTolerance: tokenClockToleranceSeconds,
      currentDate: now,
      requiredClaims: ['exp'],
    });
    return identityOfClaims(payload, expected);
  } catch (error) {
    const refused = describeRefusal(error, expected);
    if (refused === undefined) throw error;
    return { refused };
  }
}
