import { ConfigError, loadConfig } from '@media/common';
import { defaultFfmpegPath } from '@media/renderer';
import { createGeneratorBackend } from './create';
import { OpenAiCompatibleBackend } from './openai-compatible';
import { ProceduralBackend } from './procedural';

describe('createGeneratorBackend', () => {
  const upstream = { GENERATOR_BACKEND: 'openai-compatible', UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', UPSTREAM_API_KEY: 'sk-test-key' };

  it('builds the backend GENERATOR_BACKEND names', () => {
    expect(createGeneratorBackend(loadConfig({}))).toBeInstanceOf(ProceduralBackend);
    expect(createGeneratorBackend(loadConfig({ ...upstream, UPSTREAM_MODEL_MAP: 'pixel-1=gpt-image-1,motion-1=sora-2' }))).toBeInstanceOf(
      OpenAiCompatibleBackend,
    );
  });

  it('refuses a model map naming a model the catalog does not have (a typo would otherwise be ignored)', () => {
    expect(() => createGeneratorBackend(loadConfig({ ...upstream, UPSTREAM_MODEL_MAP: 'pixel-1=gpt-image-1,pixle-2=dall-e-3' }))).toThrow(ConfigError);
    expect(() => createGeneratorBackend(loadConfig({ ...upstream, UPSTREAM_MODEL_MAP: 'pixle-2=dall-e-3' }))).toThrow(/not in the catalog: pixle-2/);
  });

  it('refuses an FFMPEG_PATH that does not run, instead of failing every video later', () => {
    expect(() => createGeneratorBackend(loadConfig({ FFMPEG_PATH: '/nonexistent/ffmpeg' }))).toThrow(/FFMPEG_PATH cannot be run \(.*ENOENT/);
    expect(() => createGeneratorBackend(loadConfig({ FFMPEG_PATH: '/bin/false' }))).toThrow(/FFMPEG_PATH cannot be run \(exit 1\)/);
    expect(createGeneratorBackend(loadConfig({ FFMPEG_PATH: defaultFfmpegPath() }))).toBeInstanceOf(ProceduralBackend);
  });
});
