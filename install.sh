#!/bin/sh
# Installs peerctl and peerctl-mcp from a release archive, after checking its SHA-256.
#
#   curl -fsSL https://github.com/peerctl/peerctl/releases/latest/download/install.sh | sh
#   sh install.sh
#
# Environment:
#   PEERCTL_VERSION       a release (1.2.3 or v1.2.3) instead of the latest
#   PEERCTL_DOWNLOAD_URL  where the archives and checksums.txt are: a URL, or a folder on
#                         this machine such as a local dist/ (default: the GitHub release,
#                         latest or PEERCTL_VERSION's)
#   PEERCTL_INSTALL_DIR   where the two programs go (default: ~/.local/bin)
#   PEERCTL_OS, PEERCTL_ARCH  the platform (default: uname -s, uname -m)
#
# It reads checksums.txt first, takes from it the one archive for this platform
# (peerctl_<version>_<os>_<arch>.tar.gz), downloads it and checks its SHA-256 before
# unpacking anything. On any error it exits non-zero and installs nothing.
set -eu

say() { printf 'peerctl install: %s\n' "$*" >&2; }
fail() {
	say "$*"
	say "nothing was installed"
	exit 1
}

release=https://github.com/peerctl/peerctl/releases
if [ -n "${PEERCTL_VERSION:-}" ]; then
	default_url="$release/download/v${PEERCTL_VERSION#v}"
else
	default_url="$release/latest/download"
fi
url=${PEERCTL_DOWNLOAD_URL:-$default_url}
url=${url%/}
if [ -n "${PEERCTL_INSTALL_DIR:-}" ]; then
	dest=$PEERCTL_INSTALL_DIR
elif [ -n "${HOME:-}" ]; then
	dest=$HOME/.local/bin
else
	fail "HOME is not set: set PEERCTL_INSTALL_DIR to the folder for peerctl"
fi

os=${PEERCTL_OS:-$(uname -s)}
case $os in
Linux | linux) os=linux ;;
Darwin | darwin) os=darwin ;;
MINGW* | MSYS* | CYGWIN* | Windows* | windows)
	fail "on Windows, download peerctl_<version>_windows_amd64.zip from $release and unpack it" ;;
*) fail "no peerctl release for the operating system \"$os\" (there are linux and darwin; set PEERCTL_OS to override)" ;;
esac
arch=${PEERCTL_ARCH:-$(uname -m)}
case $arch in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) fail "no peerctl release for the architecture \"$arch\" (there are amd64 and arm64; set PEERCTL_ARCH to override)" ;;
esac

case $url in
*://*) local_dir= ;;
*) # a folder on this machine, not a URL
	[ -d "$url" ] || fail "PEERCTL_DOWNLOAD_URL=$url is neither a URL nor a folder"
	local_dir=1 ;;
esac
if [ -n "$local_dir" ]; then
	fetch() { cp "$1" "$2" 2>/dev/null; }
elif command -v curl >/dev/null 2>&1; then
	fetch() { curl -fsSL -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
	fetch() { wget -q -O "$2" "$1"; }
else
	fail "needs curl or wget to download"
fi
if command -v sha256sum >/dev/null 2>&1; then
	sha256() { sha256sum "$1" | cut -d ' ' -f 1; }
elif command -v shasum >/dev/null 2>&1; then
	sha256() { shasum -a 256 "$1" | cut -d ' ' -f 1; }
elif command -v openssl >/dev/null 2>&1; then
	sha256() { openssl dgst -sha256 -r "$1" | cut -d ' ' -f 1; }
else
	fail "needs sha256sum, shasum or openssl to check the download"
fi

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t peerctl) || fail "cannot make a temporary folder"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

if [ -n "$local_dir" ]; then
	[ -f "$url/checksums.txt" ] || fail "no checksums.txt in $url (make release puts one in dist/)"
fi
fetch "$url/checksums.txt" "$tmp/checksums.txt" ||
	fail "cannot download $url/checksums.txt (no network, or no release there?)"

# The one line "<sha256>  peerctl_<version>_<os>_<arch>.tar.gz"; the name comes from a
# downloaded file, so it must be a plain file name.
lines=$(grep -E "^[0-9a-f]{64}  peerctl_[A-Za-z0-9.+-]+_${os}_${arch}\.tar\.gz\$" "$tmp/checksums.txt" || true)
case $lines in
"") fail "$url/checksums.txt lists no archive for $os/$arch" ;;
*"
"*) fail "$url/checksums.txt lists more than one archive for $os/$arch" ;;
esac
want=${lines%% *}
archive=${lines##* }

fetch "$url/$archive" "$tmp/$archive" || fail "cannot download $url/$archive"
got=$(sha256 "$tmp/$archive") || fail "cannot compute the SHA-256 of $archive"
[ "$got" = "$want" ] ||
	fail "$archive does not match checksums.txt (SHA-256 $got, expected $want): a corrupt or tampered download"

mkdir "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x" peerctl peerctl-mcp ||
	fail "$archive does not hold peerctl and peerctl-mcp"
for p in peerctl peerctl-mcp; do
	if [ ! -f "$tmp/x/$p" ] || [ -L "$tmp/x/$p" ]; then
		fail "$archive: $p is not a regular file"
	fi
done

mkdir -p "$dest" 2>/dev/null || fail "cannot create the install folder $dest (set PEERCTL_INSTALL_DIR)"
# Both programs are copied in under temporary names first, then renamed over any old
# ones, so a failed copy (no permission, disk full) leaves the folder as it was.
for p in peerctl peerctl-mcp; do
	if ! cp "$tmp/x/$p" "$dest/.$p.install-$$" 2>/dev/null || ! chmod 755 "$dest/.$p.install-$$"; then
		rm -f "$dest/.peerctl.install-$$" "$dest/.peerctl-mcp.install-$$"
		fail "cannot write into $dest (set PEERCTL_INSTALL_DIR to a folder you can write)"
	fi
done
if ! mv -f "$dest/.peerctl-mcp.install-$$" "$dest/peerctl-mcp" || ! mv -f "$dest/.peerctl.install-$$" "$dest/peerctl"; then
	rm -f "$dest/.peerctl.install-$$" "$dest/.peerctl-mcp.install-$$"
	fail "cannot move peerctl and peerctl-mcp into $dest"
fi

say "installed peerctl and peerctl-mcp from $archive into $dest"
case ":${PATH:-}:" in
*":$dest:"*) ;;
*) say "$dest is not on your PATH; add it, e.g. in ~/.profile: export PATH=\"$dest:\$PATH\"" ;;
esac
say "next: peerctl doctor"
