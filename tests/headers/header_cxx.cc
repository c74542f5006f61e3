// SPDX-License-Identifier: MIT
//
// header_cxx.cc - <tlbpol/tlbpol.h> from C++ (built as C++11 and C++17 with
// -Wall -Wextra -Werror -pedantic).  The header is included first, so it must
// be self-contained; abi_check.h re-checks the pinned ABI with C++
// static_assert; and calling into the library checks that the declarations
// have C linkage (without extern "C" the names would be mangled and the link
// would fail).
#include <tlbpol/tlbpol.h>

#include "abi_check.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_standard_layout<tlbpol_event>::value, "tlbpol_event is standard layout");
static_assert(std::is_trivially_copyable<tlbpol_config>::value, "tlbpol_config is trivially copyable");
static_assert(std::is_same<decltype(&tlbpol_decide),
			   int (*)(const tlbpol_engine *, const tlbpol_as *, uint32_t,
				   const tlbpol_event *, tlbpol_decision *)>::value,
	      "tlbpol_decide keeps its signature");

int main()
{
	const char *v = tlbpol_version();

	if (!v || std::strcmp(v, TLBPOL_VERSION_STRING) != 0) {
		std::fprintf(stderr, "tlbpol_version() = %s, header says %s\n", v ? v : "(null)",
			     TLBPOL_VERSION_STRING);
		return 1;
	}
	if (std::strcmp(tlbpol_reason_str(TLBPOL_WHY_SPURIOUS), "spurious-fault") != 0) {
		std::fprintf(stderr, "tlbpol_reason_str(SPURIOUS) = %s\n",
			     tlbpol_reason_str(TLBPOL_WHY_SPURIOUS));
		return 1;
	}
	std::printf("C++%ld: libtlbpol %s via <tlbpol/tlbpol.h>\n", (long)__cplusplus, v);
	return 0;
}
