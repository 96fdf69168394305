import { contentTypeOfKey, extensionOf, MEDIA_TYPES, sniffImageFormat, sniffMediaFormat, UNKNOWN_CONTENT_TYPE } from './media-types';

describe('media types', () => {
  it('maps formats to key extensions: jpeg is stored as .jpg', () => {
    expect([extensionOf('png'), extensionOf('jpeg'), extensionOf('webp'), extensionOf('mp4')]).toEqual(['png', 'jpg', 'webp', 'mp4']);
  });

  it('gives every key the content type of its extension, and octet-stream to anything else', () => {
    expect(contentTypeOfKey('ws/job/0.png')).toBe('image/png');
    expect(contentTypeOfKey('ws/job/0.jpg')).toBe('image/jpeg');
    expect(contentTypeOfKey('ws/job/input-0.webp')).toBe('image/webp');
    expect(contentTypeOfKey('ws/video_1/video.mp4')).toBe('video/mp4');
    for (const key of ['ws/job/0.jpeg', 'ws/job/file', 'ws/a.b/file', 'ws/job/x.constructor', 'ws/job/x.__proto__', 'ws/job/x.toString', 'ws/job/.png']) {
      expect([key, contentTypeOfKey(key)]).toEqual([key, UNKNOWN_CONTENT_TYPE]);
    }
  });

  it('recognises uploaded images by their bytes, not their label', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]);
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0]);
    const webp = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 ')]);
    expect([sniffImageFormat(png), sniffImageFormat(jpeg), sniffImageFormat(webp)]).toEqual(['png', 'jpeg', 'webp']);
    for (const other of [Buffer.from('GIF89a'), Buffer.alloc(0), png.subarray(0, 7), Buffer.from('RIFF....WAVE')])
      expect(sniffImageFormat(other)).toBeUndefined();
  });

  it('recognises an MP4 by its ftyp box, and tells videos from images', () => {
    const mp4 = Buffer.concat([Buffer.from([0, 0, 0, 0x20]), Buffer.from('ftypisom'), Buffer.alloc(4)]);
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]);
    expect([sniffMediaFormat(mp4), sniffMediaFormat(png), sniffImageFormat(mp4)]).toEqual(['mp4', 'png', undefined]);
    for (const other of [Buffer.from('<html>ftyp</html>'), mp4.subarray(0, 11), Buffer.alloc(0)]) expect(sniffMediaFormat(other)).toBeUndefined();
  });

  it('has one row per format, each with a distinct extension and a content type', () => {
    const rows = Object.values(MEDIA_TYPES);
    expect(new Set(rows.map((r) => r.extension)).size).toBe(rows.length);
    for (const row of rows) expect(row.contentType).toMatch(/^(image|video)\/[a-z0-9]+$/);
  });
});
