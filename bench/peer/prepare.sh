# Sourced by bench/peer/run.sh and bench/batching.sh: makes the ONNX Runtime peer ready.
#   in:  ROOT, BUILD (the ember build folder), PEER_SCRATCH, PEER_WORK (optional)
#   out: ORT_VERSION, PEER_NODE_PATH (NODE_PATH for peer_bench.mjs), PEER_ONNX (the model
#        exported to ONNX), PEER_WORK (created)
# 1. installs onnxruntime-node into PEER_SCRATCH (default /tmp/ember-peer-ort; skipped if that
#    version is there already);
# 2. exports BUILD/models/minilm-l6-random to PEER_WORK/model.onnx with export_onnx.py (Debian
#    python3-torch; checked against scripts/reference_bert.py first), unless it is up to date.
ORT_VERSION=1.30.0
PEER_SCRATCH=${PEER_SCRATCH:-/tmp/ember-peer-ort}
PEER_WORK=${PEER_WORK:-/tmp/ember-peer-run}
PEER_NODE_PATH=$PEER_SCRATCH/node_modules
PEER_ONNX=$PEER_WORK/model.onnx
peer_model=$BUILD/models/minilm-l6-random
if [[ ! -f $PEER_SCRATCH/node_modules/onnxruntime-node/package.json ]] ||
   ! grep -q "\"version\": \"$ORT_VERSION\"" "$PEER_SCRATCH/node_modules/onnxruntime-node/package.json"; then
  echo "== installing onnxruntime-node@$ORT_VERSION into $PEER_SCRATCH" >&2
  mkdir -p "$PEER_SCRATCH"
  [[ -f $PEER_SCRATCH/package.json ]] ||
    echo '{"name":"ember-peer-scratch","private":true}' >"$PEER_SCRATCH/package.json"
  (cd "$PEER_SCRATCH" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund \
     "onnxruntime-node@$ORT_VERSION" >&2)
fi
[[ -f $peer_model/model.safetensors ]] || cmake --build "$BUILD" --target ember_models >&2
mkdir -p "$PEER_WORK"
if [[ ! -f $PEER_ONNX || $peer_model/model.safetensors -nt $PEER_ONNX ||
      $ROOT/bench/peer/export_onnx.py -nt $PEER_ONNX ]]; then
  echo "== exporting $peer_model to $PEER_ONNX" >&2
  /usr/bin/python3 "$ROOT/bench/peer/export_onnx.py" "$peer_model" "$PEER_ONNX" \
    2> >(grep -v -i warn >&2)
fi
