import { ConfigError, type AppConfig, type Logger } from '@media/common';
import { findModel } from '@media/domain';
import { defaultFfmpegPath, ImageRenderer, VideoEncoder } from '../media';
import type { GeneratorBackend } from './backend';
import { OpenAiCompatibleBackend } from './openai-compatible';
import { ProceduralBackend } from './procedural';

/** The backend GENERATOR_BACKEND names, for the generator's wiring. */
export function createGeneratorBackend(config: Pick<AppConfig, 'generatorBackend' | 'generationTimeoutMs' | 'ffmpegPath'>, logger?: Logger): GeneratorBackend {
  const ffmpegPath = config.ffmpegPath ?? defaultFfmpegPath();
  const settings = config.generatorBackend;
  switch (settings.kind) {
    case 'procedural':
      return new ProceduralBackend(new ImageRenderer(), new VideoEncoder({ ffmpegPath, timeoutMs: config.generationTimeoutMs }));
    case 'openai-compatible': {
      // The config module cannot see the catalog; a misspelt id here would otherwise be ignored in silence.
      const unknown = [...settings.modelMap.keys()].filter((id) => findModel(id) === undefined);
      if (unknown.length > 0) throw new ConfigError([`UPSTREAM_MODEL_MAP maps models that are not in the catalog: ${unknown.join(', ')}`]);
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
