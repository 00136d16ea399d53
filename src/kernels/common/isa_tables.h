#pragma once
// Builds a family's microkernel tables once per ISA level. Each level starts as
// a copy of the level below and overrides what it specializes, so every entry
// is always callable. Include from the family's scalar .cpp only: the
// per-ISA files include just their table header (see docs/architecture.md).
#include <array>
#include <cassert>

#include "base/isa.h"

namespace ember::kernels {

template <class Table>
using TableFiller = void (*)(Table&);

template <class Table>
const Table& select_table(const std::array<Table, kNumIsas>& tables, Isa isa) {
  assert(static_cast<int>(isa) <= static_cast<int>(detected_isa()) && "table for an ISA this CPU lacks");
  return tables[static_cast<int>(isa)];
}

// A level's filler is code compiled for that level, so it runs only when the CPU
// has the level; a table above detected_isa() stays a copy of the one below
// (select_table never hands it out).
template <class Table>
std::array<Table, kNumIsas> build_isa_tables(TableFiller<Table> scalar, TableFiller<Table> avx2,
                                             TableFiller<Table> avx512) {
  const std::array<TableFiller<Table>, kNumIsas> fillers = {scalar, avx2, avx512};
  const int top = static_cast<int>(detected_isa());
  std::array<Table, kNumIsas> t{};
  for (int level = 0; level < kNumIsas; ++level) {
    if (level > 0) t[level] = t[level - 1];
    if (level <= top) fillers[level](t[level]);
  }
  return t;
}

}  // namespace ember::kernels
