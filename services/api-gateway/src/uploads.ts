import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Request, RequestHandler } from 'express';
import multer from 'multer';
import { extensionOf, sniffImageFormat, type ImageExtension } from '@media/blob-store';
import { scratchDir } from '@media/common';
import { ApiError } from './http/api-error';
import { closeAfterAnswer, isMultipartForm } from './http/middleware';
import type { EditInputs, Upload } from './job-intake';

/** Input images one edit takes at most. */
export const MAX_IMAGES = 16;

/** Bytes that tell PNG, JPEG and WebP apart (WebP's signature ends at byte 12). */
const SIGNATURE_BYTES = 12;

const notAnImage = (param: string) => ApiError.invalid(`'${param}' must be a PNG, JPEG or WebP image.`, param, 'invalid_image_format');

/** An uploaded image held in memory (a JSON data URL), its type recognised by its bytes rather than a client's label. */
function toUpload(bytes: Buffer, param: string): Upload {
  const format = sniffImageFormat(bytes);
  if (!format) throw notAnImage(param);
  return { ext: extensionOf(format), sha256: createHash('sha256').update(bytes).digest('hex'), source: { bytes } };
}

/** What the storage engine leaves on each multer file: where it went and what it is. */
interface StreamedFile {
  path: string;
  size: number;
  sha256: string;
  ext: ImageExtension;
}

/**
 * The form fields of one request together, at most: what a JSON body of the same call may carry
 * (1 MiB). busboy holds each field whole until it ends, so without this, 50 fields of 1 MiB each
 * would sit in memory per request.
 */
const MAX_FIELD_BYTES_TOTAL = 1024 * 1024;

const GUARD = Symbol('the multipart guard of this request');

/**
 * One multipart request's way to be refused at once. multer answers its own errors only after it
 * has read the body to its end (so a client is not cut off mid-send), which would let a refused
 * request keep streaming up to its whole size; a refusal here answers now, with `Connection: close`,
 * and stops the parser, so no more of the body is read than what is in flight and what the closing
 * connection drops while the answer reaches the client ({@link closeAfterAnswer}).
 */
class MultipartGuard {
  private parser: { destroy(err?: Error): void } | undefined;
  private refused = false;

  constructor(
    private readonly req: Request,
    private readonly answer: (err: unknown) => void,
  ) {}

  static of(req: Request): MultipartGuard {
    return (req as Request & { [GUARD]: MultipartGuard })[GUARD];
  }

  /** Watches the body as busboy reads it: the total bytes, the count of parts, the fields' bytes. */
  watch(busboy: NodeJS.WritableStream & { destroy(err?: Error): void }, opts: { maxBodyBytes: number; filesAllowed: boolean }): void {
    this.parser = busboy;
    let received = 0;
    let fieldBytes = 0;
    this.req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > opts.maxBodyBytes) this.refuse(uploadTooLarge(opts.maxBodyBytes));
    });
    // A part without a name comes with none (multer refuses it); nothing here may throw inside busboy.
    busboy.on('field', (name: string | undefined, value: string | undefined) => {
      fieldBytes += Buffer.byteLength(name ?? '') + Buffer.byteLength(value ?? '');
      if (fieldBytes > MAX_FIELD_BYTES_TOTAL)
        this.refuse(
          ApiError.invalid(`Invalid multipart body: the form fields are larger than ${MAX_FIELD_BYTES_TOTAL} bytes in all.`, null, 'invalid_multipart'),
        );
    });
    // As multer does, a file part without a file name (an empty file input of a browser form) is skipped, not refused.
    busboy.on('file', (name: string | undefined, _stream: unknown, info: { filename?: string } | undefined) => {
      if (!opts.filesAllowed && info?.filename) this.refuse(new multer.MulterError('LIMIT_UNEXPECTED_FILE', name));
    });
    busboy.on('filesLimit', () => this.refuse(new multer.MulterError('LIMIT_FILE_COUNT')));
    busboy.on('fieldsLimit', () => this.refuse(new multer.MulterError('LIMIT_FIELD_COUNT')));
  }

  /** Answers with `err` now (the first refusal wins) and reads no more of the body. */
  refuse(err: unknown): void {
    if (this.refused) return;
    this.refused = true;
    this.answer(err);
    this.req.unpipe();
    // busboy is mid-event here; once it is out, destroying it fails the part in progress (its temp
    // file is removed) and makes multer clean up and let go of the request.
    const parser = this.parser;
    process.nextTick(() => parser?.destroy(err instanceof Error ? err : new Error(String(err))));
  }
}

const uploadTooLarge = (max: number) =>
  new ApiError(413, 'invalid_request_error', `The multipart body is larger than ${max} bytes (MAX_UPLOAD_TOTAL_BYTES).`, null, 'upload_too_large');

/**
 * multer's storage for edit inputs: each file part is streamed to a temp file (never held whole in
 * memory) while it is hashed, and refused as soon as its first bytes show it is not an image, or it
 * passes the per-file limit, before the rest is read. multer removes the files of a request that
 * fails; {@link multipartParser} removes those of one that ends otherwise.
 */
class StreamedImageStorage implements multer.StorageEngine {
  constructor(private readonly maxFileBytes: number) {}

  _handleFile(req: Request, file: Express.Multer.File, done: (error?: unknown, info?: Partial<Express.Multer.File & StreamedFile>) => void): void {
    const path = join(scratchDir(), `upload-${randomBytes(12).toString('hex')}`);
    const out = createWriteStream(path, { flags: 'wx' });
    const hash = createHash('sha256');
    let head = Buffer.alloc(0);
    let ext: ImageExtension | undefined;
    let size = 0;
    let settled = false;
    const fail = (error: unknown, refuse: boolean) => {
      if (settled) return;
      settled = true;
      if (refuse) MultipartGuard.of(req).refuse(error);
      file.stream.unpipe();
      file.stream.resume(); // what busboy still has of this part is not wanted
      out.destroy();
      void rm(path, { force: true }).finally(() => done(error));
    };
    const sniff = () => {
      const format = sniffImageFormat(head);
      if (!format) throw notAnImage(file.fieldname);
      ext = extensionOf(format);
    };
    // busboy stops the part at the per-file limit (multer's fileSize) and says so here.
    file.stream.once('limit', () =>
      fail(
        new ApiError(
          413,
          'invalid_request_error',
          `Uploaded file is larger than ${this.maxFileBytes} bytes (MAX_UPLOAD_BYTES).`,
          file.fieldname,
          'file_too_large',
        ),
        true,
      ),
    );
    file.stream.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (ext === undefined) {
        head = Buffer.concat([head, chunk]).subarray(0, SIGNATURE_BYTES);
        if (head.length >= SIGNATURE_BYTES) {
          try {
            sniff();
          } catch (err) {
            fail(err, true);
            return;
          }
        }
      }
      hash.update(chunk);
      if (!out.write(chunk)) {
        file.stream.pause();
        out.once('drain', () => file.stream.resume());
      }
    });
    // An error of the part itself: the request was cut off, or the guard stopped the parser.
    file.stream.once('error', (err) => fail(err, false));
    out.once('error', (err) => fail(err, false));
    file.stream.once('end', () => {
      if (settled) return;
      try {
        // A file shorter than the longest signature is judged on what there is.
        if (ext === undefined) sniff();
      } catch (err) {
        fail(err, true);
        return;
      }
      out.end(() => {
        if (settled) return;
        settled = true;
        done(undefined, { path, size, sha256: hash.digest('hex'), ext });
      });
    });
  }

  _removeFile(_req: Request, file: Express.Multer.File, done: (error: Error | null) => void): void {
    rm(file.path, { force: true }).then(
      () => done(null),
      (err: Error) => done(err),
    );
  }
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
 * multer, with every parser error answered in the error shape: 413 for a file or a body over its
 * limit, 400 `invalid_image_format` for a part that is not an image, 400 `invalid_multipart` for
 * everything else (no boundary, a body cut short, broken part headers, too many parts). Everything
 * multer and busboy can fail on is in the client's body.
 *
 * What one request can hold in memory is bounded whatever it sends: file parts go to temp files
 * (see {@link StreamedImageStorage}), fields are capped together, and the whole body is capped at
 * `maxUploadTotalBytes` (by its Content-Length before anything is read, and by counting as it
 * arrives). A request refused for what it sends is answered at once and its connection closed
 * (see {@link MultipartGuard}); the rest of its body is not read.
 */
export function multipartParser(limits: { maxUploadBytes: number; maxUploadTotalBytes: number }): MultipartParser {
  const parser = (filesAllowed: boolean) =>
    multer({
      storage: new StreamedImageStorage(limits.maxUploadBytes),
      limits: { fileSize: limits.maxUploadBytes, files: MAX_IMAGES + 1, fields: 50, fieldSize: 1024 * 1024 },
      // multer 2's hook to feed busboy (not in its type definitions): where the guard sees the body.
      streamHandler: (req: Request, busboy: NodeJS.WritableStream & { destroy(err?: Error): void }) => {
        MultipartGuard.of(req).watch(busboy, { maxBodyBytes: limits.maxUploadTotalBytes, filesAllowed });
        req.pipe(busboy);
      },
    } as multer.Options);
  const wrap =
    (handler: RequestHandler): RequestHandler =>
    (req, res, next) => {
      if (!isMultipartForm(req)) return next();
      // busboy takes an empty boundary and then finds no parts at all: a body framed by nothing.
      if (!BOUNDARY.test(req.get('content-type') ?? '')) {
        throw ApiError.invalid('Invalid multipart body: the boundary parameter must be 1 to 70 characters.', null, 'invalid_multipart');
      }
      // busboy reads the bytes as they come: an encoded body would be taken for its encoding.
      const encoding = req.get('content-encoding')?.trim().toLowerCase() || 'identity';
      if (encoding !== 'identity') {
        closeAfterAnswer(req, res);
        throw new ApiError(415, 'invalid_request_error', 'Unsupported request encoding: a multipart body is taken unencoded.', null, 'unsupported_media_type');
      }
      if (Number(req.get('content-length')) > limits.maxUploadTotalBytes) {
        // Nothing of the body is read: the connection goes with the answer.
        closeAfterAnswer(req, res);
        throw uploadTooLarge(limits.maxUploadTotalBytes);
      }
      let answered = false;
      const answer = (err?: unknown) => {
        if (answered) return;
        answered = true;
        if (err === undefined) return next();
        // The client may still be sending what will not be read.
        closeAfterAnswer(req, res);
        next(multipartError(err));
      };
      (req as Request & { [GUARD]: MultipartGuard })[GUARD] = new MultipartGuard(req, answer);
      // Files that storing did not move into the blob store (the request failed later) go when it ends.
      // A part still being written has no path yet (multer's placeholder): its own failure removes it.
      res.once('close', () => {
        for (const file of (req.files as Express.Multer.File[] | undefined) ?? []) {
          if (file.path) rm(file.path, { force: true }).catch(() => undefined);
        }
      });
      handler(req, res, answer);
    };
  return { none: () => wrap(parser(false).none()), any: () => wrap(parser(true).any()) };
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
  const streamed = (f: Express.Multer.File): Upload => {
    const { path, sha256, ext } = f as Express.Multer.File & StreamedFile;
    return { ext, sha256, source: { path } };
  };
  return check(images.map(streamed), masks.map(streamed));
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
