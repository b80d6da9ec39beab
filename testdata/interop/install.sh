#!/bin/sh
# Install the interop readers' npm dependencies, nodejs-polars and DuckDB (from the
# registry, pinned by package-lock.json) unless they are already in place.
# Idempotent and quiet; safe to run as root on a fresh CI machine.
set -eu
cd "$(dirname "$0")"
if [ -d node_modules/nodejs-polars ] &&
	[ -d node_modules/nodejs-polars-linux-x64-gnu ] &&
	[ -d node_modules/@duckdb/node-api ] &&
	[ -d node_modules/@duckdb/node-bindings-linux-x64 ] &&
	[ -f node_modules/.package-lock.json ] &&
	[ ! package-lock.json -nt node_modules/.package-lock.json ]; then
	exit 0
fi
command -v npm >/dev/null 2>&1 || {
	echo "install.sh: npm not found (install nodejs and npm first)" >&2
	exit 1
}
npm ci --no-audit --no-fund --loglevel=error >/dev/null
