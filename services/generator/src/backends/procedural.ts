import { parseSize, type ImageQuality } from '@media/domain';
import { ImageRenderer, InvalidImageError, VideoEncoder, type EncodeQuality, type EncodingOptions } from '@media/renderer';
import { PermanentGenerationError } from '../errors';
import type { GeneratorBackend, ImageEditRequest, ImageRequest, VideoRequest } from './backend';

/**
 * The built-in backend: the deterministic procedural renderer (@media/renderer), which stands in for a model.
 * It needs no network; the same request gives the same bytes.
 */
export class ProceduralBackend implements GeneratorBackend {
  constructor(
    private readonly images: ImageRenderer,
    private readonly videos: VideoEncoder,
  ) {}

  generateImages(request: ImageRequest, signal: AbortSignal): Promise<Buffer[]> {
    return this.each(request, signal, (base) => this.images.render(base));
  }

  async editImages(request: ImageEditRequest, signal: AbortSignal): Promise<Buffer[]> {
    try {
      return await this.each(request, signal, (base) => this.images.edit({ ...base, images: request.images, mask: request.mask }));
    } catch (err) {
      if (err instanceof InvalidImageError) throw new PermanentGenerationError('invalid_image', 'An input image could not be decoded.');
      throw err;
    }
  }

  makeVideo(request: VideoRequest, onProgress: (percent: number) => void, signal: AbortSignal): Promise<void> {
    const { width, height } = parseSize(request.size);
    const { prompt, seed, seconds, withAudio, outputPath } = request;
    return this.videos.encode({ prompt, seed, seconds, width, height, withAudio, outputPath }, onProgress, signal);
  }

  private async each(
    request: ImageRequest,
    signal: AbortSignal,
    make: (base: { prompt: string; seed: number; index: number; width: number; height: number } & EncodingOptions) => Promise<Buffer>,
  ): Promise<Buffer[]> {
    const { width, height } = parseSize(request.size);
    const encoding = encodingOf(request);
    const images: Buffer[] = [];
    for (let index = 0; index < request.n; index++) {
      // One image renders in well under a second; stopping between images ends a timed-out job promptly.
      signal.throwIfAborted();
      images.push(await make({ prompt: request.prompt, seed: request.seed, index, width, height, ...encoding }));
    }
    return images;
  }
}

/** OpenAI's quality names on the renderer's three encoder settings: `standard` and `hd` are DALL-E 3's medium and high. */
const ENCODE_QUALITY: Record<ImageQuality, EncodeQuality> = { low: 'low', medium: 'medium', high: 'high', auto: 'medium', standard: 'medium', hd: 'high' };

/** How the renderer encodes a request's images. */
function encodingOf(request: ImageRequest): EncodingOptions {
  return {
    format: request.format,
    quality: ENCODE_QUALITY[request.quality],
    background: request.background,
    ...(request.compression === null ? {} : { compression: request.compression }),
  };
}
