#!/usr/bin/env bash
# Make sure Debian's headless-capable Chromium is at /usr/bin/chromium before the suite
# runs the approval-page browser tests (plugins/goals/tests/test_approval_page_browser.py).
set -u
CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
  echo "Chromium present: $CHROMIUM"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium >/dev/null && [ -x "$CHROMIUM" ]; then
  echo "Chromium installed: $CHROMIUM"
  exit 0
fi
echo "Could not install Chromium (apt-get install chromium failed); the approval-page browser tests will fail." >&2
exit 1
