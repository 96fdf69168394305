const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * The one table of the media the stores hold: the format name clients use (`output_format`), the
 * extension of its keys, its content type, and how its bytes begin (uploads are sniffed with it, and
 * so is what a model server sends back). Keys end in the extension, so a key names its own content
 * type in every store and every service.
 */
export const MEDIA_TYPES = {
  png: { kind: 'image', extension: 'png', contentType: 'image/png', magic: (b: Buffer) => b.length >= 8 && b.subarray(0, 8).equals(PNG_SIGNATURE) },
  // OpenAI's format name is `jpeg`; our keys have always ended in `.jpg`.
  jpeg: { kind: 'image', extension: 'jpg', contentType: 'image/jpeg', magic: (b: Buffer) => b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  webp: {
    kind: 'image',
    extension: 'webp',
    contentType: 'image/webp',
    magic: (b: Buffer) => b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP',
  },
  // An ISO BMFF file opens with its `ftyp` box: a 4-byte size, then the box type.
  mp4: { kind: 'video', extension: 'mp4', contentType: 'video/mp4', magic: (b: Buffer) => b.length >= 12 && b.toString('latin1', 4, 8) === 'ftyp' },
} as const;

export type MediaFormat = keyof typeof MEDIA_TYPES;
export type ImageFormat = { [F in MediaFormat]: (typeof MEDIA_TYPES)[F]['kind'] extends 'image' ? F : never }[MediaFormat];
/** The extension of an image's key (`jpg` for `jpeg`). */
export type ImageExtension = (typeof MEDIA_TYPES)[ImageFormat]['extension'];

/** Content type served for a key whose extension is not in the table. */
export const UNKNOWN_CONTENT_TYPE = 'application/octet-stream';

// Looked up with text from a URL: a Map knows only its own entries, never `constructor` or `__proto__`.
const BY_EXTENSION = new Map<string, (typeof MEDIA_TYPES)[MediaFormat]>(Object.values(MEDIA_TYPES).map((type) => [type.extension, type]));
const IMAGE_FORMATS = (Object.keys(MEDIA_TYPES) as MediaFormat[]).filter((f): f is ImageFormat => MEDIA_TYPES[f].kind === 'image');

/** The extension of keys holding this format: `jpeg` → `jpg`. */
export function extensionOf<F extends MediaFormat>(format: F): (typeof MEDIA_TYPES)[F]['extension'] {
  return MEDIA_TYPES[format].extension;
}

/** The content type of a key, from its extension; {@link UNKNOWN_CONTENT_TYPE} for any other. */
export function contentTypeOfKey(key: string): string {
  const dot = key.lastIndexOf('.');
  const slash = key.lastIndexOf('/');
  if (dot <= slash + 1) return UNKNOWN_CONTENT_TYPE;
  return BY_EXTENSION.get(key.slice(dot + 1))?.contentType ?? UNKNOWN_CONTENT_TYPE;
}

/** The image format the bytes are, recognised by their signature rather than a client's label. */
export function sniffImageFormat(bytes: Buffer): ImageFormat | undefined {
  return IMAGE_FORMATS.find((format) => MEDIA_TYPES[format].magic(bytes));
}

/** The format the bytes are, images and videos alike, by their signature; undefined for anything else. */
export function sniffMediaFormat(bytes: Buffer): MediaFormat | undefined {
  return (Object.keys(MEDIA_TYPES) as MediaFormat[]).find((format) => MEDIA_TYPES[format].magic(bytes));
}
