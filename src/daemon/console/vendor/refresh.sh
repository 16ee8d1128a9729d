#!/bin/sh
# refresh.sh [XTERM_VERSION FIT_VERSION] — copies xterm.js (the console's
# terminal) and its fit addon, unmodified, from the npm registry into this
# directory with their licence, and writes VERSIONS. The copies are committed:
# the build and the daemon never reach the network. After a refresh, record the
# versions in docs/dependencies.md and run the console test.
set -eu
XTERM=${1:-6.0.0}
FIT=${2:-0.11.0}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "@xterm/xterm@$XTERM" "@xterm/addon-fit@$FIT" >/dev/null
mkdir xterm fit
tar xzf "xterm-xterm-$XTERM.tgz" -C xterm --strip-components=1
tar xzf "xterm-addon-fit-$FIT.tgz" -C fit --strip-components=1
cp xterm/lib/xterm.js "$here/xterm.js"
cp xterm/css/xterm.css "$here/xterm.css"
cp fit/lib/addon-fit.js "$here/xterm-addon-fit.js"
{
    echo "@xterm/xterm $XTERM (lib/xterm.js, css/xterm.css) and @xterm/addon-fit $FIT (lib/addon-fit.js),"
    echo "from the npm registry, unmodified. Their licence (MIT) follows."
    echo
    cat xterm/LICENSE
    if ! cmp -s xterm/LICENSE fit/LICENSE; then
        echo
        echo "@xterm/addon-fit:"
        cat fit/LICENSE
    fi
} >"$here/xterm-LICENSE.txt"
printf '@xterm/xterm %s\n@xterm/addon-fit %s\n' "$XTERM" "$FIT" >"$here/VERSIONS"
