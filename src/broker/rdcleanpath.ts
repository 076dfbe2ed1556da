import * as asn1 from 'asn1js';

/**
 * The RDCleanPath PDU of IronRDP and Devolutions Gateway (`ironrdp-rdcleanpath`): one DER `SEQUENCE` whose fields
 * are EXPLICIT context tags. A browser sends one as a request; the broker answers one, a response or an error.
 *
 * @category broker
 */
export interface RdCleanPathPdu {
  /** {@link rdCleanPathVersion}. */
  version: number;
  error?: RdCleanPathError;
  /** `host:port` the client asked for; the broker never follows it. */
  destination?: string;
  /** The proxy token the client was given. */
  proxyAuth?: string;
  serverAuth?: string;
  preconnectionBlob?: string;
  /** The client's X.224 Connection Request, or the server's Connection Confirm. */
  x224ConnectionPdu?: Uint8Array;
  /** The server's certificates, DER, leaf first. */
  serverCertChain?: Uint8Array[];
  /** `ip:port` the proxy connected to. */
  serverAddr?: string;
}

/** The error of an {@link RdCleanPathPdu}: code 1 (general) with at most one detail, or 2 (negotiation). @category broker */
export interface RdCleanPathError {
  errorCode: 1 | 2;
  httpStatusCode?: number;
  /** A Windows socket error, such as 10061 (refused) or 10060 (timed out). */
  wsaLastError?: number;
  tlsAlertCode?: number;
}

/** The only version of the PDU: 3389 + 1. @category broker */
export const rdCleanPathVersion = 3390;

/** Why bytes are not a request the broker takes. */
export class RdCleanPathFormatError extends Error {
  override name = 'RdCleanPathFormatError';
}

// The tag of each field, in the order DER requires; 8 is reserved.
const fieldTags = {
  version: 0,
  error: 1,
  destination: 2,
  proxyAuth: 3,
  serverAuth: 4,
  preconnectionBlob: 5,
  x224ConnectionPdu: 6,
  serverCertChain: 7,
  serverAddr: 9,
} as const;
const errorTags = { errorCode: 0, httpStatusCode: 1, wsaLastError: 2, tlsAlertCode: 3 } as const;

const explicit = (tagNumber: number, inner: asn1.AsnType) =>
  new asn1.Constructed({ idBlock: { tagClass: 3, tagNumber }, value: [inner] });
const integer = (value: number) => new asn1.Integer({ value });
const utf8 = (value: string) => new asn1.Utf8String({ value });
const octets = (bytes: Uint8Array) => new asn1.OctetString({ valueHex: bytes });

function encodeError(error: RdCleanPathError): asn1.Sequence {
  const fields: asn1.AsnType[] = [explicit(errorTags.errorCode, integer(error.errorCode))];
  if (error.httpStatusCode !== undefined)
    fields.push(explicit(errorTags.httpStatusCode, integer(error.httpStatusCode)));
  if (error.wsaLastError !== undefined)
    fields.push(explicit(errorTags.wsaLastError, integer(error.wsaLastError)));
  if (error.tlsAlertCode !== undefined)
    fields.push(explicit(errorTags.tlsAlertCode, integer(error.tlsAlertCode)));
  return new asn1.Sequence({ value: fields });
}

/**
 * The DER bytes of a PDU, as `RDCleanPathPdu::to_der` writes them.
 *
 * @example
 * ```ts
 * encodeRdCleanPathPdu({ version: rdCleanPathVersion, error: { errorCode: 1, httpStatusCode: 403 } });
 * ```
 * @category broker
 */
export function encodeRdCleanPathPdu(pdu: RdCleanPathPdu): Uint8Array {
  const fields: asn1.AsnType[] = [explicit(fieldTags.version, integer(pdu.version))];
  if (pdu.error) fields.push(explicit(fieldTags.error, encodeError(pdu.error)));
  if (pdu.destination !== undefined) fields.push(explicit(fieldTags.destination, utf8(pdu.destination)));
  if (pdu.proxyAuth !== undefined) fields.push(explicit(fieldTags.proxyAuth, utf8(pdu.proxyAuth)));
  if (pdu.serverAuth !== undefined) fields.push(explicit(fieldTags.serverAuth, utf8(pdu.serverAuth)));
  if (pdu.preconnectionBlob !== undefined)
    fields.push(explicit(fieldTags.preconnectionBlob, utf8(pdu.preconnectionBlob)));
  if (pdu.x224ConnectionPdu)
    fields.push(explicit(fieldTags.x224ConnectionPdu, octets(pdu.x224ConnectionPdu)));
  if (pdu.serverCertChain) {
    const chain = new asn1.Sequence({ value: pdu.serverCertChain.map(octets) });
    fields.push(explicit(fieldTags.serverCertChain, chain));
  }
  if (pdu.serverAddr !== undefined) fields.push(explicit(fieldTags.serverAddr, utf8(pdu.serverAddr)));
  return new Uint8Array(new asn1.Sequence({ value: fields }).toBER(false));
}

/** An error PDU: code 1 with `detail`, or code 2 with the server's failing confirm. @category broker */
export function rdCleanPathErrorPdu(
  detail:
    | { httpStatusCode: number }
    | { wsaLastError: number }
    | { tlsAlertCode: number }
    | { negotiationFailure: Uint8Array },
): Uint8Array {
  if ('negotiationFailure' in detail) {
    return encodeRdCleanPathPdu({
      version: rdCleanPathVersion,
      error: { errorCode: 2 },
      x224ConnectionPdu: detail.negotiationFailure,
    });
  }
  return encodeRdCleanPathPdu({ version: rdCleanPathVersion, error: { errorCode: 1, ...detail } });
}

/**
 * What the first bytes of a PDU say: `incomplete` until its DER header is there, then its whole length (header
 * included). Nothing else is read, so a length of gigabytes costs nothing.
 *
 * @category broker
 */
export function measureRdCleanPathPdu(
  bytes: Uint8Array,
): { kind: 'incomplete' } | { kind: 'measured'; totalBytes: number } | { kind: 'malformed'; reason: string } {
  if (bytes.length === 0) return { kind: 'incomplete' };
  // a SEQUENCE is one identifier byte; anything else is refused before asn1js decodes it, times and all
  if (bytes[0] !== 0x30) return { kind: 'malformed', reason: 'it does not start with a DER SEQUENCE' };
  // the parse stops at the end of the bytes given; the identifier and length it decoded are all that is read
  const { result } = asn1.fromBER(bytes, { maxDepth: 1, maxNodes: 1, maxContentLength: 0 });
  const { lenBlock } = result;
  if (lenBlock.isIndefiniteForm)
    return { kind: 'malformed', reason: 'its length is indefinite, which DER forbids' };
  if (lenBlock.blockLength === 0) return { kind: 'incomplete' };
  return { kind: 'measured', totalBytes: 1 + lenBlock.blockLength + lenBlock.length };
}

function explicitFields(node: asn1.AsnType, what: string): Map<number, asn1.AsnType> {
  if (!(node instanceof asn1.Sequence)) throw new RdCleanPathFormatError(`${what} is not a SEQUENCE`);
  const fields = new Map<number, asn1.AsnType>();
  let previous = -1;
  for (const field of node.valueBlock.value) {
    const { tagClass, tagNumber, isConstructed } = field.idBlock;
    const inner = field instanceof asn1.Constructed ? field.valueBlock.value : [];
    if (tagClass !== 3 || !isConstructed || inner.length !== 1 || inner[0] === undefined)
      throw new RdCleanPathFormatError(`${what} has a field that is not an EXPLICIT context tag`);
    if (tagNumber <= previous) throw new RdCleanPathFormatError(`${what} has its fields out of order`);
    previous = tagNumber;
    fields.set(tagNumber, inner[0]);
  }
  return fields;
}

function readInteger(node: asn1.AsnType | undefined, what: string): number | undefined {
  if (node === undefined) return undefined;
  // at most 32 bits: every integer of the PDU is a version, a status or an error code
  if (!(node instanceof asn1.Integer) || node.valueBlock.valueHexView.length > 4)
    throw new RdCleanPathFormatError(`${what} is not a small INTEGER`);
  return node.valueBlock.valueDec;
}

function readText(node: asn1.AsnType | undefined, what: string): string | undefined {
  if (node === undefined) return undefined;
  if (!(node instanceof asn1.Utf8String)) throw new RdCleanPathFormatError(`${what} is not a UTF8String`);
  return node.valueBlock.value;
}

function readOctets(node: asn1.AsnType | undefined, what: string): Uint8Array | undefined {
  if (node === undefined) return undefined;
  if (!(node instanceof asn1.OctetString) || node.idBlock.isConstructed)
    throw new RdCleanPathFormatError(`${what} is not an OCTET STRING`);
  return node.valueBlock.valueHexView.slice();
}

function readError(node: asn1.AsnType | undefined): RdCleanPathError | undefined {
  if (node === undefined) return undefined;
  const fields = explicitFields(node, 'the error');
  const errorCode = readInteger(fields.get(errorTags.errorCode), 'error_code');
  if (errorCode !== 1 && errorCode !== 2) throw new RdCleanPathFormatError('error_code is neither 1 nor 2');
  const httpStatusCode = readInteger(fields.get(errorTags.httpStatusCode), 'http_status_code');
  const wsaLastError = readInteger(fields.get(errorTags.wsaLastError), 'wsa_last_error');
  const tlsAlertCode = readInteger(fields.get(errorTags.tlsAlertCode), 'tls_alert_code');
  return {
    errorCode,
    ...(httpStatusCode === undefined ? {} : { httpStatusCode }),
    ...(wsaLastError === undefined ? {} : { wsaLastError }),
    ...(tlsAlertCode === undefined ? {} : { tlsAlertCode }),
  };
}

function readBer(bytes: Uint8Array) {
  let parsed: ReturnType<typeof asn1.fromBER>;
  try {
    parsed = asn1.fromBER(bytes, { maxDepth: 6, maxNodes: 256, maxContentLength: bytes.length });
  } catch (error) {
    // asn1js reports most faults in `result.error`, but throws while it converts a time type's text
    throw new RdCleanPathFormatError(`it is not DER: ${(error as Error).message}`);
  }
  if (parsed.offset === -1) throw new RdCleanPathFormatError(`it is not DER: ${parsed.result.error}`);
  return parsed;
}

/**
 * Reads one whole PDU of exactly `bytes` (see {@link measureRdCleanPathPdu}), with asn1js bounded to the size of
 * a PDU: a field of another type, a tag it does not know, fields out of order, trailing bytes or another version
 * throw an {@link RdCleanPathFormatError} that says which.
 *
 * @category broker
 */
export function decodeRdCleanPathPdu(bytes: Uint8Array): RdCleanPathPdu {
  const { offset, result } = readBer(bytes);
  if (offset !== bytes.length) throw new RdCleanPathFormatError('bytes follow the PDU');
  const fields = explicitFields(result, 'the PDU');
  const known = new Set<number>(Object.values(fieldTags));
  for (const tag of fields.keys()) {
    if (!known.has(tag)) throw new RdCleanPathFormatError(`the PDU has an unknown field [${tag}]`);
  }
  const version = readInteger(fields.get(fieldTags.version), 'version');
  if (version !== rdCleanPathVersion)
    throw new RdCleanPathFormatError(`its version is ${version ?? 'missing'}, not ${rdCleanPathVersion}`);
  const chainNode = fields.get(fieldTags.serverCertChain);
  let serverCertChain: Uint8Array[] | undefined;
  if (chainNode !== undefined) {
    if (!(chainNode instanceof asn1.Sequence))
      throw new RdCleanPathFormatError('server_cert_chain is not a SEQUENCE');
    serverCertChain = chainNode.valueBlock.value.map(
      (certificate) => readOctets(certificate, 'a certificate') as Uint8Array,
    );
  }
  const pdu: RdCleanPathPdu = { version };
  const error = readError(fields.get(fieldTags.error));
  const text = {
    destination: readText(fields.get(fieldTags.destination), 'destination'),
    proxyAuth: readText(fields.get(fieldTags.proxyAuth), 'proxy_auth'),
    serverAuth: readText(fields.get(fieldTags.serverAuth), 'server_auth'),
    preconnectionBlob: readText(fields.get(fieldTags.preconnectionBlob), 'preconnection_blob'),
    serverAddr: readText(fields.get(fieldTags.serverAddr), 'server_addr'),
  };
  const x224ConnectionPdu = readOctets(fields.get(fieldTags.x224ConnectionPdu), 'x224_connection_pdu');
  if (error) pdu.error = error;
  for (const [key, value] of Object.entries(text)) {
    if (value !== undefined) pdu[key as keyof typeof text] = value;
  }
  if (x224ConnectionPdu) pdu.x224ConnectionPdu = x224ConnectionPdu;
  if (serverCertChain) pdu.serverCertChain = serverCertChain;
  return pdu;
}
