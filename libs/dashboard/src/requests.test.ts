import { attemptResultWords } from './requests';

describe('attemptResultWords', () => {
  it('says an answer as its status and reason phrase, and an attempt without one as its error class in words', () => {
    expect(attemptResultWords({ status: 200, error: null })).toBe('200 OK');
    expect(attemptResultWords({ status: 500, error: 'http_error' })).toBe('500 Internal Server Error');
    expect(attemptResultWords({ status: 503, error: 'http_error' })).toBe('503 Service Unavailable');
    expect(attemptResultWords({ status: 301, error: 'redirect' })).toBe('301 Moved Permanently (redirect, not followed)');
    expect(attemptResultWords({ status: 599, error: 'http_error' })).toBe('599');
    expect(attemptResultWords({ status: null, error: 'timeout' })).toBe('timeout (no answer in time)');
    expect(attemptResultWords({ status: null, error: 'refused' })).toBe('connection refused');
    expect(attemptResultWords({ status: null, error: 'blocked_address' })).toBe('blocked address (not allowed)');
    expect(attemptResultWords({ status: null, error: 'dns' })).toBe('host name did not resolve');
  });
});
