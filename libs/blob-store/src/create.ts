import type { BlobStoreSettings } from '@media/common';
import type { BlobStore } from './blob-store';
import { FileBlobStore } from './file-blob-store';
import { S3BlobStore } from './s3-blob-store';

/** The store `BLOB_STORE` names, for a service's wiring. */
export function createBlobStore(settings: BlobStoreSettings): BlobStore {
  switch (settings.kind) {
    case 'fs':
      return new FileBlobStore(settings.dir);
    case 's3':
      return new S3BlobStore({ bucket: settings.bucket, region: settings.region, endpoint: settings.endpoint, forcePathStyle: settings.forcePathStyle });
  }
}
