import { bypassesProxy, proxyFor, proxySettingsFrom } from './proxy';

describe('proxySettingsFrom', () => {
  it('reads the lower-case names first', () => {
    expect(
      proxySettingsFrom({ HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:1', HTTP_PROXY: 'http://plain:1', NO_PROXY: 'a', no_proxy: '' }),
    ).toEqual({
      httpsProxy: 'http://lower:1',
      httpProxy: 'http://plain:1',
      noProxy: 'a',
    });
  });
});

describe('proxyFor', () => {
  const settings = { httpProxy: 'http://proxy.corp:3128', httpsProxy: 'http://user:p%40ss@secure.corp:8443' };

  it('takes HTTPS_PROXY for wss and HTTP_PROXY for ws', () => {
    expect(proxyFor(new URL('wss://api.example.com/v1'), settings)?.href).toBe('http://user:p%40ss@secure.corp:8443/');
    expect(proxyFor(new URL('ws://api.example.com/v1'), settings)?.href).toBe('http://proxy.corp:3128/');
    expect(proxyFor(new URL('wss://api.example.com/v1'), { httpProxy: 'http://proxy.corp:3128' })).toBeUndefined();
  });

  it('takes a proxy without a scheme as http', () => {
    expect(proxyFor(new URL('ws://api.example.com/'), { httpProxy: 'proxy.corp:3128' })?.href).toBe('http://proxy.corp:3128/');
  });

  it('refuses a proxy it cannot speak to', () => {
    expect(() => proxyFor(new URL('wss://api.example.com/'), { httpsProxy: 'socks5://proxy.corp:1080' })).toThrow(
      /HTTPS_PROXY must be an http:\/\/ or https:\/\/ proxy/,
    );
  });

  it('goes direct for a host NO_PROXY names', () => {
    expect(proxyFor(new URL('ws://localhost:8080/'), { ...settings, noProxy: 'localhost,127.0.0.1' })).toBeUndefined();
    expect(proxyFor(new URL('ws://gateway:8080/'), { ...settings, noProxy: 'localhost,127.0.0.1' })?.host).toBe('proxy.corp:3128');
  });
});

describe('bypassesProxy', () => {
  it.each([
    ['http://localhost:8080/', 'localhost', true],
    ['http://LOCALHOST:8080/', 'localhost', true],
    ['http://127.0.0.1:8080/', 'localhost, 127.0.0.1', true],
    ['http://127.0.0.2:8080/', '127.0.0.1', false],
    ['http://[::1]:8080/', '::1', true],
    ['http://[::1]:8080/', '[::1]', true],
    ['http://[::1]:8080/', '0:0:0:0:0:0:0:1', true],
    ['https://api.example.com/', 'example.com', true],
    ['https://api.example.com/', '.example.com', true],
    ['https://api.example.com/', '*.example.com', true],
    ['https://example.com/', '.example.com', true],
    ['https://badexample.com/', 'example.com', false],
    ['https://api.example.com/', 'api.example.com:443', true],
    ['https://api.example.com/', 'api.example.com:8443', false],
    ['http://api.example.com/', 'api.example.com:80', true],
    ['http://10.1.2.3/', '10.0.0.0/8', true],
    ['http://11.1.2.3/', '10.0.0.0/8', false],
    ['http://[fd00::5]/', 'fd00::/8', true],
    ['http://anything/', '*', true],
    ['http://anything/', '', false],
    ['http://anything/', ' , ', false],
  ])('%s with NO_PROXY=%j: %s', (url, noProxy, expected) => {
    expect(bypassesProxy(new URL(url), noProxy)).toBe(expected);
  });
});
