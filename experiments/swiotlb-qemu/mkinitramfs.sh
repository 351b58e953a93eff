#!/bin/sh
# Build the guest initramfs: static busybox, Debian's fio with the shared
# libraries ldd lists, and guest-init.sh as /init. Usage: mkinitramfs.sh OUT.cpio
set -eu
out=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/bin "$root"/dev "$root"/proc "$root"/sys "$root"/tmp "$root"/lib64
cp /bin/busybox "$root"/bin/busybox
ln -s busybox "$root"/bin/sh
cp "$(command -v fio)" "$root"/bin/fio
mkdir -p "$root"/lib
gcc -O2 -shared -fPIC -o "$root"/lib/timerfd-shim.so "$here"/timerfd-shim.c
for lib in $(ldd "$(command -v fio)" | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cp "$here"/guest-init.sh "$root"/init
chmod +x "$root"/init
(cd "$root" && find . | cpio -o -H newc --quiet) > "$out"
echo "initramfs: $out ($(du -h "$out" | cut -f1))"
