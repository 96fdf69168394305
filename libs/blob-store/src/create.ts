import type { BlobStoreSettings } from '@media/common';
import type { BlobStore } from './blob-store';
import { FileBlobStore } from './file-blob-store';

/**
 * The store `BLOB_STORE` names, for a service's wiring. The S3 store is loaded only when chosen:
 * loading the AWS SDK takes a quarter of a second and tens of MB, which a deployment on a shared
 * volume would pay for nothing.
 */
export async function createBlobStore(settings: BlobStoreSettings): Promise<BlobStore> {
  switch (settings.kind) {
    case 'fs':
      return new FileBlobStore(settings.dir);
    case 's3': {
      const { S3BlobStore } = await import('./s3-blob-store.js');
      return new S3BlobStore({ bucket: settings.bucket, region: settings.region, endpoint: settings.endpoint, forcePathStyle: settings.forcePathStyle });
    }
  }
}

/**
 * Start-up check of the store `BLOB_STORE` names: the fs store's MEDIA_DIR must be writable
 * (UnwritableDirectoryError otherwise). The S3 store has nothing local to check; its credentials and
 * bucket are proved by the first request, whose failures are retried.
 */
export async function checkBlobStoreWritable(settings: BlobStoreSettings): Promise<void> {
  if (settings.kind === 'fs') await new FileBlobStore(settings.dir).checkWritable();
}
