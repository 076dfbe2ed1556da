import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeRdCleanPathPdu,
  encodeRdCleanPathPdu,
  measureRdCleanPathPdu,
  RdCleanPathFormatError,
  rdCleanPathErrorPdu,
  rdCleanPathVersion,
} from '../../../src/broker/rdcleanpath.js';

// The DER vectors of IronRDP's own tests (crates/ironrdp-testsuite-core/tests/rdcleanpath.rs).
const requestDer = Buffer.from(
  '3032a00402020d3ea20d0c0b64657374696e6174696f6ea30c0c0a70726f78792061757468a5050c03504342a6060404deadbeff',
  'hex',
);
const responseDer = Buffer.from(
  '3034a00402020d3ea6060404deadbeffa7143012' +
    '0404deadbeff0404deadbeff0404deadbeff' +
    'a90e0c0c3139322e3136382e372e3935',
  'hex',
);
const httpErrorDer = Buffer.from('3015a00402020d3ea10d300ba003020101a104020201f4', 'hex');
const tlsErrorDer = Buffer.from('3014a00402020d3ea10c300aa003020101a303020130', 'hex');
const deadbeef = Uint8Array.from([0xde, 0xad, 0xbe, 0xff]);

describe('the RDCleanPath PDU', () => {
  it("reads IronRDP's request vector and writes it back byte for byte", () => {
    const pdu = decodeRdCleanPathPdu(requestDer);
    expect(pdu).toEqual({
      version: rdCleanPathVersion,
      destination: 'destination',
      proxyAuth: 'proxy auth',
      preconnectionBlob: 'PCB',
      x224ConnectionPdu: deadbeef,
    });
    expect(Buffer.from(encodeRdCleanPathPdu(pdu)).equals(requestDer)).toBe(true);
  });

  it("writes IronRDP's response, HTTP error and TLS error vectors exactly", () => {
    const response = encodeRdCleanPathPdu({
      version: rdCleanPathVersion,
      x224ConnectionPdu: deadbeef,
      serverCertChain: [deadbeef, deadbeef, deadbeef],
      serverAddr: '192.168.7.95',
    });
    expect(Buffer.from(response).toString('hex')).toBe(responseDer.toString('hex'));
    expect(Buffer.from(rdCleanPathErrorPdu({ httpStatusCode: 500 })).toString('hex')).toBe(
      httpErrorDer.toString('hex'),
    );
    expect(Buffer.from(rdCleanPathErrorPdu({ tlsAlertCode: 48 })).toString('hex')).toBe(
      tlsErrorDer.toString('hex'),
    );
    expect(decodeRdCleanPathPdu(tlsErrorDer).error).toEqual({ errorCode: 1, tlsAlertCode: 48 });
  });

  it('writes a negotiation failure as code 2 carrying the guest confirm', () => {
    const confirm = Uint8Array.from([3, 0, 0, 19, 14, 0xd0, 0, 0, 0, 0, 0, 3, 0, 8, 0, 5, 0, 0, 0]);
    expect(decodeRdCleanPathPdu(rdCleanPathErrorPdu({ negotiationFailure: confirm }))).toEqual({
      version: rdCleanPathVersion,
      error: { errorCode: 2 },
      x224ConnectionPdu: confirm,
    });
  });

  it('measures a PDU from its header alone, whatever length it claims', () => {
    expect(measureRdCleanPathPdu(requestDer.subarray(0, 0))).toEqual({ kind: 'incomplete' });
    expect(measureRdCleanPathPdu(requestDer.subarray(0, 1))).toEqual({ kind: 'incomplete' });
    expect(measureRdCleanPathPdu(requestDer.subarray(0, 2))).toEqual({
      kind: 'measured',
      totalBytes: requestDer.length,
    });
    // a long-form length of 2 GiB, and one whose length bytes are still to come
    expect(measureRdCleanPathPdu(Buffer.from([0x30, 0x84, 0x80, 0, 0, 0]))).toEqual({
      kind: 'measured',
      totalBytes: 6 + 2 ** 31,
    });
    expect(measureRdCleanPathPdu(Buffer.from([0x30, 0x82, 0x01]))).toEqual({ kind: 'incomplete' });
    expect(measureRdCleanPathPdu(Buffer.from([0x02, 0x01, 0x00])).kind).toBe('malformed');
    expect(measureRdCleanPathPdu(Buffer.from([0x30, 0x80])).kind).toBe('malformed');
  });

  it('refuses another version, trailing bytes, unknown or unordered fields and wrong types, saying which', () => {
    const withVersion = (version: number) =>
      encodeRdCleanPathPdu({ version, destination: 'x', proxyAuth: 't', x224ConnectionPdu: deadbeef });
    const refusal = (bytes: Uint8Array) => {
      try {
        decodeRdCleanPathPdu(bytes);
        return 'decoded';
      } catch (error) {
        expect(error).toBeInstanceOf(RdCleanPathFormatError);
        return (error as Error).message;
      }
    };
    expect(refusal(withVersion(3389))).toBe('its version is 3389, not 3390');
    expect(refusal(Buffer.concat([requestDer, Buffer.from([0])]))).toBe('bytes follow the PDU');
    // [8] is reserved; [2] after [3]; an INTEGER where a UTF8String belongs
    expect(refusal(Buffer.from('300ca00402020d3ea8040c027878', 'hex'))).toBe(
      'the PDU has an unknown field [8]',
    );
    expect(refusal(Buffer.from('3010a00402020d3ea3030c0174a2030c0178', 'hex'))).toBe(
      'the PDU has its fields out of order',
    );
    expect(refusal(Buffer.from('300ba00402020d3ea203020101', 'hex'))).toBe('destination is not a UTF8String');
    expect(refusal(Buffer.from('0201', 'hex'))).toMatch(/^it is not DER/);
    // an empty GeneralizedTime, alone and inside a field: asn1js throws its own Error while it decodes the date
    expect(refusal(Buffer.from('1800', 'hex'))).toMatch(/^it is not DER/);
    expect(refusal(Buffer.from('3004a0021800', 'hex'))).toMatch(/^it is not DER/);
    expect(measureRdCleanPathPdu(Buffer.from('1800', 'hex'))).toEqual({
      kind: 'malformed',
      reason: 'it does not start with a DER SEQUENCE',
    });
  });

  it('reads back every request it writes, and throws only its own error on any other bytes', () => {
    const text = fc.string({ maxLength: 64 });
    fc.assert(
      fc.property(
        fc.record(
          {
            destination: text,
            proxyAuth: text,
            preconnectionBlob: text,
            x224ConnectionPdu: fc.uint8Array({ maxLength: 64 }),
          },
          { requiredKeys: [] },
        ),
        (fields) => {
          const pdu = { version: rdCleanPathVersion, ...fields };
          expect(decodeRdCleanPathPdu(encodeRdCleanPathPdu(pdu))).toEqual(pdu);
        },
      ),
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
        expect(['incomplete', 'measured', 'malformed']).toContain(measureRdCleanPathPdu(bytes).kind);
        try {
          decodeRdCleanPathPdu(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(RdCleanPathFormatError);
        }
      }),
    );
  });
});
