import type { RequestHandler } from 'express';
import { jsonBody } from '@media/common';
import type { CapLog } from './connection-guard';
import { budgetedJson } from './json-budget';
import { uploadSlots } from './upload-slots';

/**
 * The JSON body parsers of the API's routes. Each route mounts the one it reads after its API key
 * and its rate limit, so a request that is refused (a wrong key, a workspace over its limit), or
 * that matches no route, is never parsed; and every body's nesting and number of values are
 * bounded before it is (@media/common's jsonBody).
 */
export interface RequestBodies {
  /** Every body but an edit's: a few fields. */
  json: RequestHandler;
  /** An edit's, which carries its images inline (base64 data URLs), within the process's budget. */
  editJson: RequestHandler;
  /** A multipart body's place among the workspace's uploads to this process (upload-slots.ts): before the multipart parser. */
  uploadSlot: RequestHandler;
}

export function requestBodies(limits: { maxJsonBytes: number; maxConcurrentUploadsPerWorkspace: number }, capLog: CapLog): RequestBodies {
  return {
    json: jsonBody('1mb'),
    editJson: budgetedJson(limits.maxJsonBytes),
    uploadSlot: uploadSlots(limits.maxConcurrentUploadsPerWorkspace, capLog),
  };
}
