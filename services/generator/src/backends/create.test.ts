import { ConfigError, loadConfig } from '@media/common';
import { defaultFfmpegPath } from '@media/renderer';
import { createGeneratorBackend } from './create';
import { OpenAiCompatibleBackend } from './openai-compatible';
import { ProceduralBackend } from './procedural';

describe('createGeneratorBackend', () => {
  const upstream = { GENERATOR_BACKEND: 'openai-compatible', UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', UPSTREAM_API_KEY: 'sk-test-key' };

  it('builds the backend GENERATOR_BACKEND names', async () => {
    await expect(createGeneratorBackend(loadConfig({}))).resolves.toBeInstanceOf(ProceduralBackend);
    await expect(createGeneratorBackend(loadConfig({ ...upstream, UPSTREAM_MODEL_MAP: 'pixel-1=gpt-image-1,motion-1=sora-2' }))).resolves.toBeInstanceOf(
      OpenAiCompatibleBackend,
    );
  });

  it('refuses a model map naming a model the catalog does not have (a typo would otherwise be ignored)', async () => {
    await expect(createGeneratorBackend(loadConfig({ ...upstream, UPSTREAM_MODEL_MAP: 'pixel-1=gpt-image-1,pixle-2=dall-e-3' }))).rejects.toThrow(ConfigError);
    await expect(createGeneratorBackend(loadConfig({ ...upstream, UPSTREAM_MODEL_MAP: 'pixle-2=dall-e-3' }))).rejects.toThrow(/not in the catalog: pixle-2/);
  });

  it('refuses an FFMPEG_PATH that does not run, instead of failing every video later', async () => {
    await expect(createGeneratorBackend(loadConfig({ FFMPEG_PATH: '/nonexistent/ffmpeg' }))).rejects.toThrow(/FFMPEG_PATH cannot be run \(.*ENOENT/);
    await expect(createGeneratorBackend(loadConfig({ FFMPEG_PATH: '/bin/false' }))).rejects.toThrow(/FFMPEG_PATH cannot be run \(exit 1\)/);
    await expect(createGeneratorBackend(loadConfig({ FFMPEG_PATH: defaultFfmpegPath() }))).resolves.toBeInstanceOf(ProceduralBackend);
  });
});
