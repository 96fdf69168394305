import { spawnSync } from 'node:child_process';
import { ConfigError, type AppConfig, type Logger } from '@media/common';
import { findModel } from '@media/domain';
import { defaultFfmpegPath, ImageRenderer, limitImageThreads, threadsPerJob, VideoEncoder } from '@media/renderer';
import type { GeneratorBackend } from './backend';
import { ProceduralBackend } from './procedural';

/**
 * The backend GENERATOR_BACKEND names, for the generator's wiring. The model server's client (the
 * openai SDK, some 230 modules) is loaded only when that backend is chosen: a generator on the
 * built-in renderer starts without it.
 */
export async function createGeneratorBackend(
  config: Pick<AppConfig, 'generatorBackend' | 'generationTimeoutMs' | 'ffmpegPath' | 'generatorConcurrency'>,
  logger?: Logger,
): Promise<GeneratorBackend> {
  if (config.ffmpegPath) refuseUnrunnable(config.ffmpegPath);
  const ffmpegPath = config.ffmpegPath ?? defaultFfmpegPath();
  const settings = config.generatorBackend;
  // Both backends decode images with sharp; the procedural one encodes videos with ffmpeg too.
  const threads = threadsPerJob(config.generatorConcurrency);
  limitImageThreads(threads);
  switch (settings.kind) {
    case 'procedural':
      return new ProceduralBackend(new ImageRenderer(), new VideoEncoder({ ffmpegPath, timeoutMs: config.generationTimeoutMs, threads }));
    case 'openai-compatible': {
      // The config module cannot see the catalog; a misspelt id here would otherwise be ignored in silence.
      const unknown = [...settings.modelMap.keys()].filter((id) => findModel(id) === undefined);
      if (unknown.length > 0) throw new ConfigError([`UPSTREAM_MODEL_MAP maps models that are not in the catalog: ${unknown.join(', ')}`]);
      const { OpenAiCompatibleBackend } = await import('./openai-compatible.js');
      return new OpenAiCompatibleBackend({
        baseUrl: settings.baseUrl,
        apiKey: settings.apiKey,
        modelMap: settings.modelMap,
        timeoutMs: config.generationTimeoutMs,
        ffmpegPath,
        logger,
      });
    }
  }
}

/**
 * Runs `FFMPEG_PATH -version` once at start-up: a path that does not run would otherwise leave a
 * healthy-looking generator whose every video fails, the reason only in its log.
 */
function refuseUnrunnable(ffmpegPath: string): void {
  const ran = spawnSync(ffmpegPath, ['-version'], { stdio: 'ignore', timeout: 10_000 });
  const reason = ran.error ? ran.error.message : ran.status !== 0 ? `exit ${ran.status ?? ran.signal}` : undefined;
  if (reason) throw new ConfigError([`FFMPEG_PATH cannot be run (${reason}); every video would fail`]);
}
