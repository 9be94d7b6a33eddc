#include "lowering_notes.h"

#include "execution_order.h"

namespace geopt::ascend {

std::unordered_map<const Node*, std::string> lowering_notes(const Graph& graph,
                                                            const std::vector<size_t>& order,
                                                            const MemoryPlan& memory,
                                                            const StreamPlan& streams) {
  std::vector<std::string> waits(order.size()), records(order.size());
  for (size_t e = 0; e < streams.events.size(); ++e) {
    const std::string name = " e" + std::to_string(e);
    records[streams.events[e].from] += name;
    waits[streams.events[e].to] += name;
  }
  std::unordered_map<const Node*, std::string> notes;
  for (size_t k = 0; k < order.size(); ++k) {
    const Node& n = *graph.nodes()[order[k]];
    std::string note = "step " + std::to_string(k + 1) + ", stream " +
                       std::to_string(k < streams.stream_of.size() ? streams.stream_of[k] : 0);
    if (!waits[k].empty()) note += ", waits" + waits[k];
    if (!records[k].empty()) note += ", records" + records[k];
    for (const Value* out : n.outputs()) {
      auto it = out ? memory.buffer_of.find(out) : memory.buffer_of.end();
      if (it == memory.buffer_of.end()) continue;
      const PlannedBuffer& b = memory.buffers[it->second];
      const bool piece =
          memory.offset_in_buffer.count(out) > 0;  // a view Split's piece: its own bytes within the buffer
      note += ", " + out->name() + " at pool+" + std::to_string(memory.offset_of(out)) + " (" +
              std::to_string(piece ? static_bytes(*out) : b.bytes) + " B)";
    }
    notes[&n] = std::move(note);
  }
  return notes;
}

}  // namespace geopt::ascend
