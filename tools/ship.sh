# Sourced by tools/bundle.sh and tools/wheel.sh: copying the libraries tgc's binaries load into what ships them.

# system_library SONAME: whether every Linux has it (or it must come from the machine: glibc), so that it ships
# nowhere.
system_library() {
  case "$1" in
    linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libmvec.so.* | libdl.so.* | librt.so.* | \
      libpthread.so.* | libutil.so.* | libresolv.so.* | libstdc++.so.* | libgcc_s.so.* | libz.so.* | \
      libzstd.so.* | liblzma.so.* | libtinfo.so.*) return 0 ;;
  esac
  return 1
}

# ship_libraries WHO DEST BINARY...: copies every library the binaries load (as ldd finds them), but the
# system's and those already in DEST, into DEST, stripped; WHO names the caller in the error for one that is
# not installed.
ship_libraries() {
  local who=$1 dest=$2 soname path
  shift 2
  while read -r soname path; do
    system_library "$soname" && continue
    [ -e "$dest/$soname" ] && continue
    if [ "$path" = "not" ]; then
      echo "$who: $soname, which it needs, is not installed" >&2
      return 1
    fi
    cp -L "$path" "$dest/$soname"
    chmod 644 "$dest/$soname"
    strip --strip-unneeded "$dest/$soname"
  done < <(ldd "$@" 2>/dev/null | awk '$2 == "=>" { print $1, $3 }' | sort -u)
}
