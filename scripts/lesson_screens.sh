#!/usr/bin/env bash
# Screenshots of every step of every lesson, as a student sees them: the release binary under
# Xvfb, opened with `gui --lesson N --step K` from an empty folder (the bundled lessons and
# data), at each size and theme. Runs a lesson launches are reused from one workspace.
#
#   bash scripts/lesson_screens.sh OUT [LESSON…]
#
# Sizes and themes: SIZES="1280x800 1920x1080" THEMES="light dark" (the defaults); WAIT
# seconds per step (default 8; lesson 8's sweep needs longer the first time); EXTRA="--presenter"
# adds arguments to every `gui`. Needs Xvfb,
# xdotool and ImageMagick's `import` (`apt-get install -y xvfb xdotool imagemagick`).
set -euo pipefail
out=${1:?usage: lesson_screens.sh OUT [LESSON…]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/target/release/piecewise-lab}
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
sizes=${SIZES:-"1280x800 1920x1080"}
themes=${THEMES:-"light dark"}
wait_s=${WAIT:-8}
lessons=("$@")
if [ ${#lessons[@]} -eq 0 ]; then
    for f in "$here"/assets/lessons/[0-9]*.toml; do
        n=$(basename "$f"); lessons+=("${n%%-*}")
    done
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export HOME=$work/home PIECEWISE_WORKSPACE=$work/workspace
mkdir -p "$HOME" "$work/cwd"
display=:97
for size in $sizes; do
    Xvfb $display -screen 0 "${size}x24" >/dev/null 2>&1 &
    xvfb=$!
    sleep 1
    for theme in $themes; do
        for l in "${lessons[@]}"; do
            file=$(ls "$here"/assets/lessons/"$l"-*.toml)
            steps=$(grep -c '^\[\[step\]\]' "$file")
            for k in $(seq 1 "$steps"); do
                shot=$out/lesson$l-step$k-$size-$theme.png
                # exec: $! is the app itself, so the kill below ends it (a subshell's kill
                # left the app running beside the next one).
                log=$out/lesson$l-step$k-$size-$theme.log
                # A window that has not appeared in 30 s is tried once more (and its log kept
                # beside the shots).
                w=
                for attempt in 1 2; do
                    (cd "$work/cwd" && DISPLAY=$display exec "$bin" gui --lesson "$l" --step "$k" \
                        --theme "$theme" --window-size "$size" ${EXTRA:-} >"$log" 2>&1) &
                    app=$!
                    # Up to 30 s for the window (a busy machine is slow to open one).
                    for _ in $(seq 150); do
                        w=$(DISPLAY=$display xdotool search --name '^Piecewise Lab$' 2>/dev/null | head -1 || true)
                        [ -n "$w" ] && break
                        sleep 0.2
                    done
                    [ -n "$w" ] && break
                    echo "no window for lesson $l step $k ($size $theme), attempt $attempt: see $log" >&2
                    kill $app 2>/dev/null || true
                    wait $app 2>/dev/null || true
                done
                # The pointer out of the way (a tooltip would hide what is under it).
                [ -n "$w" ] && { DISPLAY=$display xdotool windowmove "$w" 0 0 mousemove 0 "${size#*x}" || true; }
                sleep "$wait_s"
                DISPLAY=$display import -window root "$shot"
                kill $app 2>/dev/null || true
                wait $app 2>/dev/null || true
                # The log is kept only when something went wrong.
                [ -n "$w" ] && ! grep -qi "error\|panick" "$log" && rm -f "$log"
                echo "$shot"
            done
        done
    done
    kill $xvfb
    wait $xvfb 2>/dev/null || true
done
