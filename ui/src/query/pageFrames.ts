// The agents, webhooks and permission log pages keep their cached data current from the live
// stream, whether or not they are on screen (their queries never go stale on their own: a
// page opened again shows the cache, so the cache must have heard everything meanwhile).
import { onFrame } from '../store/live';
import { applyAgentFrame } from './agentFrames';
import { queryClient } from './client';
import { applyPermissionFrame } from './permissionFrames';
import { applyWebhookFrame } from './webhookFrames';

/** Starts listening; returns the function that stops. */
export function listenForPageFrames(client = queryClient): () => void {
  return onFrame((frame) => {
    applyAgentFrame(client, frame);
    applyWebhookFrame(client, frame);
    applyPermissionFrame(client, frame);
  });
}
