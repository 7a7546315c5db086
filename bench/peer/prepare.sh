# Sourced by bench/peer/run.sh and bench/batching.sh: makes the ONNX Runtime peer ready.
#   in:  ROOT, BUILD (the ember build folder), PEER_WORK (optional)
#   out: PEER_PY (the project's Python, with onnxruntime from PyPI: scripts/setup.sh),
#        ORT_VERSION, PEER_ONNX (the model exported to ONNX), PEER_WORK (created)
# Exports BUILD/models/minilm-l6-random to PEER_WORK/model.onnx with export_onnx.py (checked
# against scripts/reference_bert.py first), unless it is up to date.
PEER_PY=${PEER_PY:-$ROOT/.venv/bin/python3}
PEER_WORK=${PEER_WORK:-/tmp/ember-peer-run}
PEER_ONNX=$PEER_WORK/model.onnx
if ! ORT_VERSION=$("$PEER_PY" -c 'import onnxruntime; print(onnxruntime.__version__)'); then
  echo "prepare.sh: $PEER_PY has no onnxruntime; run scripts/setup.sh (or set PEER_PY)" >&2
  return 1
fi
peer_model=$BUILD/models/minilm-l6-random
[[ -f $peer_model/model.safetensors ]] || cmake --build "$BUILD" --target ember_models >&2
mkdir -p "$PEER_WORK"
if [[ ! -f $PEER_ONNX || $peer_model/model.safetensors -nt $PEER_ONNX ||
      $ROOT/bench/peer/export_onnx.py -nt $PEER_ONNX ]]; then
  echo "== exporting $peer_model to $PEER_ONNX" >&2
  "$PEER_PY" "$ROOT/bench/peer/export_onnx.py" "$peer_model" "$PEER_ONNX" \
    2> >(grep -v -i warn >&2)
fi
