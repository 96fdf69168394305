import { LISTEN_HELP, OVERVIEW_HELP, parseCommandLine } from './cli';
import { EVENT_TYPES } from './settings';

const env = { MEDIA_API_KEY: 'sk_from_env' };

describe('parseCommandLine', () => {
  it.each([[['--help']], [['-h']], [['help']]])('%j prints the overview', (argv) => {
    expect(parseCommandLine(argv, {})).toEqual({ kind: 'help', text: OVERVIEW_HELP });
  });

  it.each([[['listen', '--help']], [['listen', '-h']], [['help', 'listen']], [['listen', '--forward-to', 'nope', '--help']]])(
    '%j prints listen help',
    (argv) => {
      expect(parseCommandLine(argv, {})).toEqual({ kind: 'help', text: LISTEN_HELP });
    },
  );

  it.each([
    [[], /a command is needed/],
    [['frob'], /unknown command "frob"/],
    [['--frob'], /unknown option --frob/],
    [['help', 'frob'], /no help for "frob"/],
    [['listen', '--frob'], /^unknown option --frob$/],
    [['listen', 'extra', '--forward-to', 'http://localhost:3000/'], /positional argument/],
    [['listen'], /--forward-to is required/],
    [['listen', '--forward-to'], /--forward-to/],
    [['listen', '--forward-to', 'localhost:3000'], /--forward-to must be an http:\/\/ or https:\/\/ URL/],
    [['listen', '--forward-to', 'ftp://localhost/x'], /--forward-to must be an http:\/\/ or https:\/\/ URL/],
    [['listen', '--forward-to', 'http://localhost:3000/', '--events', 'video.completed,video.started'], /unknown event type "video.started"/],
    [['listen', '--forward-to', 'http://localhost:3000/', '--events', ','], /--events needs at least one event type/],
    [['listen', '--forward-to', 'http://localhost:3000/', '--base-url', 'gateway:8080'], /--base-url must be an http/],
    [['listen', '--forward-to', 'http://localhost:3000/', '--print-secret=yes'], /print-secret/],
  ])('%j is a usage error', (argv, message) => {
    const command = parseCommandLine(argv, env);
    expect(command).toMatchObject({ kind: 'usage-error', message: expect.stringMatching(message), usage: expect.stringContaining('Usage: media-callbacks') });
  });

  it('needs an API key from the flag or the environment', () => {
    expect(parseCommandLine(['listen', '--forward-to', 'http://localhost:3000/'], {})).toMatchObject({
      kind: 'usage-error',
      message: 'an API key is required: set MEDIA_API_KEY (or pass --api-key)',
    });
  });

  it('reads listen with its defaults from the environment', () => {
    const command = parseCommandLine(['listen', '--forward-to', 'http://localhost:3000/webhooks'], env);
    expect(command).toEqual({
      kind: 'listen',
      settings: {
        forwardTo: new URL('http://localhost:3000/webhooks'),
        events: [],
        printSecret: false,
        apiKey: 'sk_from_env',
        baseUrl: new URL('http://localhost:8080'),
        proxy: { httpProxy: undefined, httpsProxy: undefined, noProxy: undefined },
      },
    });
  });

  it('prefers the flags to the environment', () => {
    const command = parseCommandLine(
      [
        'listen',
        '--forward-to=https://127.0.0.1:4443/hooks?x=1',
        '--events',
        ' image.completed , video.failed,image.completed',
        '--print-secret',
        '--api-key',
        'sk_flag',
        '--base-url',
        'https://api.example.com/media',
      ],
      { ...env, MEDIA_BASE_URL: 'http://ignored:1', HTTPS_PROXY: 'http://proxy:3128', NO_PROXY: 'localhost' },
    );
    expect(command).toEqual({
      kind: 'listen',
      settings: {
        forwardTo: new URL('https://127.0.0.1:4443/hooks?x=1'),
        events: ['image.completed', 'video.failed'],
        printSecret: true,
        apiKey: 'sk_flag',
        baseUrl: new URL('https://api.example.com/media'),
        proxy: { httpProxy: undefined, httpsProxy: 'http://proxy:3128', noProxy: 'localhost' },
      },
    });
  });

  it('takes MEDIA_BASE_URL and names it when it is wrong', () => {
    expect(parseCommandLine(['listen', '--forward-to', 'http://localhost:3000/'], { ...env, MEDIA_BASE_URL: 'https://api.example.com' })).toMatchObject({
      settings: { baseUrl: new URL('https://api.example.com') },
    });
    expect(parseCommandLine(['listen', '--forward-to', 'http://localhost:3000/'], { ...env, MEDIA_BASE_URL: 'api.example.com' })).toMatchObject({
      kind: 'usage-error',
      message: expect.stringMatching(/^MEDIA_BASE_URL must be/),
    });
  });
});

describe('help', () => {
  it('names every option of listen, the environment and an example', () => {
    for (const option of ['--forward-to', '--events', '--print-secret', '--api-key', '--base-url', '--help']) expect(LISTEN_HELP).toContain(option);
    for (const name of ['MEDIA_API_KEY', 'MEDIA_BASE_URL', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY']) expect(LISTEN_HELP).toContain(name);
    for (const type of EVENT_TYPES) expect(LISTEN_HELP).toContain(type);
    expect(LISTEN_HELP).toMatch(/Example:\n {2}export MEDIA_API_KEY=.*\n {2}npx media-callbacks listen --forward-to http:\/\/localhost:3000\/webhooks/);
  });

  it('fits a 100-column terminal', () => {
    for (const line of [...OVERVIEW_HELP.split('\n'), ...LISTEN_HELP.split('\n')]) expect(line.length).toBeLessThanOrEqual(100);
  });
});
