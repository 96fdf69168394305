import type { Request, RequestHandler } from 'express';
import multer from 'multer';
import { extensionOf, sniffImageFormat } from '@media/blob-store';
import { ApiError } from './http/api-error';
import type { EditInputs, Upload } from './job-intake';

/** Input images one edit takes at most. */
export const MAX_IMAGES = 16;

/** An uploaded image, its type recognised by its bytes rather than a client's label. */
function toUpload(bytes: Buffer, param: string): Upload {
  const format = sniffImageFormat(bytes);
  if (!format) throw ApiError.invalid(`'${param}' must be a PNG, JPEG or WebP image.`, param, 'invalid_image_format');
  return { bytes, ext: extensionOf(format) };
}

/** RFC 2046: a boundary is 1 to 70 characters, quoted or not. */
const BOUNDARY = /;\s*boundary=(?:"[^"]{1,70}"|[^";\s]{1,70})\s*(?:;|$)/i;

export interface MultipartParser {
  /** Form fields only; a file part is refused. */
  none(): RequestHandler;
  /** Form fields and files. */
  any(): RequestHandler;
}

/**
 * multer, with every parser error answered in the error shape: 413 for a file over the limit, 400
 * `invalid_multipart` for everything else (no boundary, a body cut short, broken part headers, too
 * many parts). Everything multer and busboy can fail on is in the client's body: memory storage
 * does no I/O of its own.
 */
export function multipartParser(maxUploadBytes: number): MultipartParser {
  const upload = multer({
    storage: multer.memoryStorage(),
    limits: { fileSize: maxUploadBytes, files: MAX_IMAGES + 1, fields: 50, fieldSize: 1024 * 1024 },
  });
  const wrap =
    (handler: RequestHandler): RequestHandler =>
    (req, res, next) => {
      // busboy takes an empty boundary and then finds no parts at all: a body framed by nothing.
      if (req.is('multipart/form-data') && !BOUNDARY.test(req.get('content-type') ?? '')) {
        throw ApiError.invalid('Invalid multipart body: the boundary parameter must be 1 to 70 characters.', null, 'invalid_multipart');
      }
      handler(req, res, (err?: unknown) => next(err === undefined ? undefined : multipartError(err)));
    };
  return { none: () => wrap(upload.none()), any: () => wrap(upload.any()) };
}

function multipartError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof multer.MulterError) {
    if (err.code === 'LIMIT_FILE_SIZE') return new ApiError(413, 'invalid_request_error', 'Uploaded file is too large.', err.field ?? null, 'file_too_large');
    return ApiError.invalid(`Invalid multipart body: ${err.message}.`, err.field ?? null, 'invalid_multipart');
  }
  // busboy's own errors ("Multipart: Boundary not found", "Unexpected end of form", "Malformed part header").
  const detail = err instanceof Error ? err.message.replace(/\.$/, '') : 'unreadable';
  return ApiError.invalid(`Invalid multipart body: ${detail}.`, null, 'invalid_multipart');
}

/** Edit inputs from a multipart request (`image`, `image[]`, `mask`). */
export function multipartEditInputs(req: Request): EditInputs {
  const files = (req.files as Express.Multer.File[] | undefined) ?? [];
  const images = files.filter((f) => f.fieldname === 'image' || f.fieldname === 'image[]');
  const masks = files.filter((f) => f.fieldname === 'mask');
  const stray = files.find((f) => !['image', 'image[]', 'mask'].includes(f.fieldname));
  if (stray) throw ApiError.invalid(`Unexpected file field '${stray.fieldname}'.`, stray.fieldname, 'unknown_parameter');
  return check(
    images.map((f) => toUpload(f.buffer, 'image')),
    masks.map((f) => toUpload(f.buffer, 'mask')),
  );
}

/** The one form of a JSON edit input: an inline base64 data URL of an image. */
export const DATA_URL = /^data:image\/(png|jpeg|jpg|webp);base64,([A-Za-z0-9+/=\s]+)$/;

function fromDataUrl(value: unknown, param: string, maxBytes: number): Upload {
  const url = typeof value === 'object' && value !== null ? (value as { image_url?: unknown }).image_url : value;
  // Only inline data: fetching a client-named URL from here would be a server-side request forgery hole.
  const match = typeof url === 'string' ? DATA_URL.exec(url) : null;
  if (!match) throw ApiError.invalid(`'${param}' must be a base64 data URL (data:image/png;base64,...).`, param, 'invalid_image_format');
  const bytes = Buffer.from(match[2], 'base64');
  if (bytes.length > maxBytes) throw new ApiError(413, 'invalid_request_error', `'${param}' is larger than ${maxBytes} bytes.`, param, 'file_too_large');
  return toUpload(bytes, param);
}

/** Edit inputs from a JSON body: `image` (data URL or array), or `images: [{image_url}]`, and `mask`. Removes them from the body. */
export function jsonEditInputs(body: Record<string, unknown>, maxUploadBytes: number): EditInputs {
  const raw = body.images ?? body.image;
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  const images = list.map((v, i) => fromDataUrl(v, `${body.images ? 'images' : 'image'}[${i}]`, maxUploadBytes));
  const masks = body.mask === undefined ? [] : [fromDataUrl(body.mask, 'mask', maxUploadBytes)];
  delete body.images;
  delete body.image;
  delete body.mask;
  return check(images, masks);
}

function check(images: Upload[], masks: Upload[]): EditInputs {
  if (images.length === 0) throw ApiError.invalid("Missing required parameter: 'image'.", 'image', 'missing_required_parameter');
  if (images.length > MAX_IMAGES) throw ApiError.invalid(`At most ${MAX_IMAGES} images can be edited at once.`, 'image', 'too_many_images');
  if (masks.length > 1) throw ApiError.invalid('Only one mask can be given.', 'mask', 'invalid_value');
  return { images, mask: masks[0] ?? null };
}
