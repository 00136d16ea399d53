#!/usr/bin/env bash
# The build's ISA rule (docs/architecture.md, "ISA dispatch"), checked on the
# object files that make up a linked product. Code compiled for an ISA level
# (*_avx2.cpp, *_avx512*.cpp) may run only after the CPU check, so:
#   1. an object not compiled for a level holds no instruction above x86-64's
#      baseline (SSE2): no VEX/EVEX encoding, no ymm/zmm/mask register, no
#      BMI/LZCNT/MOVBE/POPCNT, no SSE3..SSE4.2;
#   2. an ISA object has no static initializer (it would run at start-up, before
#      any check);
#   3. an ISA object defines no vague-linkage (inline, template, weak) symbol:
#      the linker keeps one copy of such a definition for the whole program,
#      and it may be the one built for the higher level;
#   4. the only entry points into an ISA object from outside its level are its
#      table fillers (fill_*), which kernels/common/isa_tables.h calls only for
#      the levels the CPU has; an ISA object may call into a lower level.
# usage: check_isa_objects.sh FILE...   (object files and static archives)
# Prints each breach and exits 1 when there is one.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 FILE..." >&2; exit 2; }

# The level an object was compiled for, from its name (CMakeLists.txt sets the
# flags by the same names).
level_awk='function level(obj) {
  if (match(obj, /_(avx2|avx512[a-z0-9]*)\.cpp\.o$/)) return substr(obj, RSTART + 1, RLENGTH - 7)
  return "baseline"
}
function rank(l) { return l == "baseline" ? 0 : l == "avx2" ? 1 : l == "avx512" ? 2 : 3 }'

# 1. Above-baseline instructions in baseline objects (objdump -d, AT&T syntax).
breaches=$(objdump -d --no-show-raw-insn -w "$@" | awk "$level_awk"'
  /^In archive / { next }
  /file format elf/ { obj = $1; sub(/:$/, "", obj); base = level(obj) == "baseline"; next }
  /^[0-9a-f]+ <.*>:$/ { fn = $0; sub(/^[0-9a-f]+ </, "", fn); sub(/>:$/, "", fn); next }
  !base || !/^ +[0-9a-f]+:\t/ { next }
  {
    split($0, f, "\t"); insn = f[2]; m = insn; sub(/ .*/, "", m)
    bad = m ~ /^v/ && m !~ /^ver[rw]$/
    bad = bad || m ~ /^k/ || insn ~ /%[yz]mm|%k[0-7]/
    bad = bad || m ~ /^(andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|lzcnt|tzcnt|movbe|popcnt|crc32)[bwlq]?$/
    bad = bad || m ~ /^(addsubp|haddp|hsubp|lddqu|movddup|movs[hl]dup|fisttp|pabs|palignr|phadd|phsub|pmaddubsw|pmulhrsw|pshufb|psign)/
    bad = bad || m ~ /^(blendp|blendvp|pblend|dpp[sd]|extractps|insertps|movntdqa|mpsadbw|packusdw|pcmp[eg][qt]q|pcmp[ei]str|pextr[bdq]|phminposuw|pinsr[bdq]|pmax(sb|sd|ud|uw)|pmin(sb|sd|ud|uw)|pmov[sz]x|pmuldq|pmulld|ptest|round[sp][sd])/
    if (bad && count[obj]++ < 3) print "baseline object " obj ": " fn ": " insn
  }')

# Symbols per object: "OBJ TYPE NAME" (defined) and "OBJ U NAME" (undefined).
symbols=$(nm -A --defined-only "$@" 2>/dev/null | awk 'NF >= 3 { n = split($1, p, ":"); obj = p[n - 1]; print obj, $(NF - 1), $NF }'
          nm -A --undefined-only "$@" 2>/dev/null | awk 'NF >= 2 { n = split($1, p, ":"); obj = p[n - 1]; print obj, "U", $NF }')

# 2. Static initializers in ISA objects.
breaches+=$(objdump -h -w "$@" | awk "$level_awk"'
  /file format elf/ { obj = $1; sub(/:$/, "", obj); next }
  level(obj) != "baseline" && $2 ~ /^\.(init_array|ctors)/ { print "\nISA object " obj " has a static initializer (" $2 ")" }')

# 3 and 4, over the symbol table (names demangled for the messages only).
breaches+=$(printf '%s\n' "$symbols" | awk "$level_awk"'
  $2 == "U" { users[$3] = users[$3] " " $1; next }
  $2 ~ /^[WVu]$/ && level($1) != "baseline" { print "\nISA object " $1 " defines an inline/template symbol: " $3; next }
  $2 ~ /^[TtDdBbRr]$/ { owner[$3] = $1 }
  END {
    for (s in users) {
      if (!(s in owner)) continue
      to = level(owner[s]); if (to == "baseline") continue
      n = split(substr(users[s], 2), us, " ")
      for (i = 1; i <= n; i++) {
        from = level(us[i])
        if (from == to || rank(from) > rank(to)) continue
        if (from == "baseline" && s ~ /fill_[a-z0-9_]+_avx(2|512[a-z0-9]*)/) continue
        print "\n" us[i] " (" from ") calls into " owner[s] " (" to "): " s
      }
    }
  }')

breaches=$(printf '%s\n' "$breaches" | sed '/^$/d')
if [ -n "$breaches" ]; then
  printf '%s\n' "$breaches" | c++filt
  echo "check_isa_objects: the ISA rule is broken (see docs/architecture.md, \"ISA dispatch\")" >&2
  exit 1
fi
