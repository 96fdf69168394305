import { CallbackUrlRejectedError } from '@media/callback-guard';
import { classifyRejection, classifyStatus, classifyTransportError } from './classify';

const err = (code: string, name = 'RequestError') => Object.assign(new Error(code), { code, name });

describe('classifyStatus', () => {
  it.each([200, 201, 202, 204, 299])('%i delivers', (status) => expect(classifyStatus(status)).toBeNull());
  it.each([300, 301, 302, 303, 307, 308])('%i is a redirect, never followed', (status) => expect(classifyStatus(status)).toBe('redirect'));
  it.each([400, 401, 404, 410, 429, 500, 502, 503, 504, 100])('%i is an http_error', (status) => expect(classifyStatus(status)).toBe('http_error'));
});

describe('classifyTransportError', () => {
  it.each([
    [err('ETIMEDOUT', 'TimeoutError'), 'timeout'],
    [err('ETIMEDOUT'), 'timeout'],
    [err('ENOTFOUND'), 'dns'],
    [err('EAI_AGAIN'), 'dns'],
    [err('ECONNREFUSED'), 'refused'],
    [err('EHOSTUNREACH'), 'refused'],
    [err('ENETUNREACH'), 'refused'],
    [err('ECONNRESET'), 'reset'],
    [err('EPIPE'), 'reset'],
    [err('DEPTH_ZERO_SELF_SIGNED_CERT'), 'tls'],
    [err('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), 'tls'],
    [err('SELF_SIGNED_CERT_IN_CHAIN'), 'tls'],
    [err('CERT_HAS_EXPIRED'), 'tls'],
    [err('ERR_TLS_CERT_ALTNAME_INVALID'), 'tls'],
    [err('ERR_SSL_WRONG_VERSION_NUMBER'), 'tls'],
    [err('EPROTO'), 'tls'],
    [err('HPE_INVALID_CONSTANT'), 'http_error'],
    [err('ERR_SOMETHING_NEW'), 'reset'],
    [new Error('no code at all'), 'reset'],
    [undefined, 'reset'],
  ] as const)('%p is %s', (error, expected) => {
    expect(classifyTransportError(error)).toBe(expected);
  });
});

describe('classifyRejection', () => {
  it('reports a name that no longer resolves as dns', () => {
    expect(classifyRejection(new CallbackUrlRejectedError('unresolvable', 'x'))).toBe('dns');
  });

  it.each(['private_address', 'scheme', 'credentials', 'malformed'] as const)('reports %s as blocked_address', (reason) => {
    expect(classifyRejection(new CallbackUrlRejectedError(reason, 'x'))).toBe('blocked_address');
  });
});
