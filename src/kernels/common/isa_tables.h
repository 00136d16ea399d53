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

template <class Table>
std::array<Table, kNumIsas> build_isa_tables(TableFiller<Table> scalar, TableFiller<Table> avx2,
                                             TableFiller<Table> avx512) {
  std::array<Table, kNumIsas> t{};
  scalar(t[0]);
  t[1] = t[0];
  avx2(t[1]);
  t[2] = t[1];
  avx512(t[2]);
  return t;
}

}  // namespace ember::kernels
