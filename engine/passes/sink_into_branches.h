#pragma once
// An If whose branches give an output different shapes, with nodes after it reading that
// output (a model that frames its audio per sample rate, 512 samples a frame at 16 kHz
// and 256 at 8 kHz, then pools the frames): a plan holds every value at one static
// shape, so those readers move into both branches, each copy reading its branch's
// result, until the If's outputs have one shape in both (the pooled features). Only one
// branch runs, so the moved work costs nothing. The readers move while all their other
// inputs are computed before the If (the branches read them as captures).
#include <cstddef>

#include "ir/graph.h"

namespace geopt {

class OpRegistry;

// Moves readers into the branches of every If of the model's graph (not of bodies) that
// needs it, its inputs' shapes static; returns how many nodes moved. An If left with
// outputs of branch-dependent shape that are read is left as it is (compile names it).
size_t sink_readers_into_branches(Model& model, const OpRegistry& ops);

}  // namespace geopt
