#!/usr/bin/env bash
# Fails if a relative link in README.md or docs/*.md (or the other top-level pages) points at a
# file or directory that does not exist. External (scheme:) and in-page (#) links are not checked.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
for page in *.md docs/*.md; do
	dir=$(dirname "$page")
	while IFS= read -r target; do
		target=${target%%#*}
		[ -z "$target" ] && continue
		case "$target" in *://*|mailto:*) continue ;; esac
		if [ ! -e "$dir/$target" ]; then
			echo "$page: broken link: $target" >&2
			bad=1
		fi
	done < <(grep -o '\]([^)]*)' "$page" | sed 's/^](//; s/)$//')
done
[ "$bad" = 0 ] && echo "doc links: ok"
exit "$bad"
