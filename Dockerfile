# syntax=docker/dockerfile:1
# One image for all three services; the command picks one:
#   node services/api-gateway/dist/main.js | services/generator/dist/main.js | services/webhook-dispatcher/dist/main.js
# and the admin CLI: node tools/admin/dist/main.js <command>.
# ffmpeg/ffprobe come from the @ffmpeg-installer / @ffprobe-installer npm packages and sharp from its
# prebuilt @img/* packages (glibc builds, hence Debian rather than Alpine); no apt packages are needed.

# Node 24, the active LTS line (.nvmrc, package.json engines).
ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: all dependencies (TypeScript is a dev dependency), compile every package -----------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY . .
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
RUN npx tsc -b
# The dashboard's browser app (Vite): its output, libs/dashboard/dist/web, is served by the gateway.
RUN node libs/dashboard/web/build-if-stale.mjs
# Only what runs: the manifests (npm ci needs every workspace's package.json to link @media/*),
# the compiled dist folders, and the Lua scripts a package reads beside dist (its lua/ folder).
RUN mkdir -p /out \
 && cp package.json package-lock.json /out/ \
 && for dir in libs/* services/* tools/*; do \
      mkdir -p "/out/$dir" && cp "$dir/package.json" "/out/$dir/" && cp -R "$dir/dist" "/out/$dir/dist"; \
      if [ -d "$dir/lua" ]; then cp -R "$dir/lua" "/out/$dir/lua"; fi; \
    done

# --- runtime: production dependencies only ------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    MEDIA_DIR=/data/media \
    PORT=8080
WORKDIR /app
COPY --from=build /out/ ./
# TypeScript (23 MB) is an optional peer of a runtime package (valibot, for its types), so --omit=dev
# keeps it ("devOptional" in the lock file); nothing loads it at run time (npm run test:image checks).
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/typescript node_modules/.bin/tsc node_modules/.bin/tsserver \
 && mkdir -p /data/media \
 && chown -R node:node /data
# uid 1000; the Kubernetes manifests require runAsNonRoot with this uid and a read-only root
# filesystem (/tmp and /data/media are volumes there).
USER node
# 8080: the gateway's public port (PORT); 9464: every service's ops port (OPS_PORT).
EXPOSE 8080 9464
# The services handle SIGTERM themselves (drain, then exit within SHUTDOWN_TIMEOUT_MS).
CMD ["node", "services/api-gateway/dist/main.js"]
