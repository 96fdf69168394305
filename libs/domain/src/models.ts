/**
 * The model catalog: what can be requested and what it costs. Prices are in US dollars.
 * `GET /v1/models` lists it; validation and `cost` both read from it.
 */
export interface ImageModel {
  id: string;
  kind: 'image';
  /** Allowed `WxH` sizes and the price of one image at each. */
  pricePerImage: Readonly<Record<string, number>>;
  defaultSize: string;
}

export interface VideoModel {
  id: string;
  kind: 'video';
  sizes: readonly string[];
  defaultSize: string;
  minSeconds: number;
  maxSeconds: number;
  defaultSeconds: number;
  pricePerSecond: number;
  /** Extra per second when an audio track is made. */
  audioPricePerSecond: number;
}

export type Model = ImageModel | VideoModel;

export const MODEL_CATALOG: readonly Model[] = [
  {
    id: 'pixel-1',
    kind: 'image',
    pricePerImage: {
      '256x256': 0.005,
      '512x512': 0.01,
      '1024x1024': 0.04,
      '1536x1024': 0.06,
      '1024x1536': 0.06,
    },
    defaultSize: '1024x1024',
  },
  {
    id: 'motion-1',
    kind: 'video',
    sizes: ['640x360', '360x640', '1280x720', '720x1280', '1920x1080', '1080x1920'],
    defaultSize: '1280x720',
    minSeconds: 1,
    maxSeconds: 20,
    defaultSeconds: 4,
    pricePerSecond: 0.1,
    audioPricePerSecond: 0.02,
  },
];

/** Creation time of the catalog entries, for the OpenAI-shaped model list. */
export const MODEL_CATALOG_CREATED_AT = 1_767_225_600;

export function findModel(id: string): Model | undefined {
  return MODEL_CATALOG.find((m) => m.id === id);
}

export function parseSize(size: string): { width: number; height: number } {
  const [width, height] = size.split('x').map(Number);
  return { width, height };
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** `1280x720` → `{resolution: "720p", aspect_ratio: "16:9"}`: the short side names the resolution. */
export function describeSize(size: string): { resolution: string; aspect_ratio: string } {
  const { width, height } = parseSize(size);
  const d = gcd(width, height);
  return { resolution: `${Math.min(width, height)}p`, aspect_ratio: `${width / d}:${height / d}` };
}
