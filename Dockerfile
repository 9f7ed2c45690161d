# syntax=docker/dockerfile:1
# Build: install everything (npm ci runs `prepare`, which compiles TypeScript), then drop dev deps.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY . .
RUN npm ci && npm prune --omit=dev

# Run: compiled JavaScript, production dependencies, a non-root user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    PORT=3000 \
    DATA_DIR=/var/lib/herald
WORKDIR /app
RUN groupadd --system herald \
 && useradd --system --gid herald --home-dir /var/lib/herald --shell /usr/sbin/nologin herald \
 && mkdir -p /var/lib/herald \
 && chown herald:herald /var/lib/herald
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/assets ./assets
USER herald
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# V8's allocation-site pretenuring off and 8 MB semi-spaces on node's command line, as npm start
# and bin/herald.js's shebang do (docs/decisions.md, "Delivery: V8's pretenuring off" and "The
# young generation").
ENTRYPOINT ["node", "--no-allocation-site-pretenuring", "--max-semi-space-size=8", "bin/herald.js"]
CMD ["serve"]
