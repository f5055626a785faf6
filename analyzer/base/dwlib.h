/* libdw and libelf (elfutils) and libstdc++'s demangler, loaded when a command first needs them
 * (tprof_dwlib_load) rather than at every start: they cost about 3 ms of loading and relocation,
 * a third of a small command's time, and a command that finds every name in the symbol cache, or
 * names none, needs none of them. A file that includes this header calls the functions by their
 * own names, which the macros below turn into the loaded pointers: it must have called
 * tprof_dwlib_load, and had it succeed, first. */
#ifndef TPROF_DWLIB_H
#define TPROF_DWLIB_H

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stddef.h>

/* libstdc++'s C entry point of abi::__cxa_demangle: a malloc'd string, or NULL with *status set. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Every function used, by library: X(name) */
#define TPROF_DWLIB_DW(X)                                                                                  \
	X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_child) X(dwarf_diecu) X(dwarf_diename)                \
	X(dwarf_filesrc) X(dwarf_formref_die) X(dwarf_formstring) X(dwarf_formudata) X(dwarf_getscopes)     \
	X(dwarf_getsrcfiles) X(dwarf_haspc) X(dwarf_ranges) X(dwarf_siblingof) X(dwarf_srclang)             \
	X(dwarf_tag) X(dwfl_begin) X(dwfl_build_id_find_elf) X(dwfl_end) X(dwfl_lineinfo)                   \
	X(dwfl_module_addrdie) X(dwfl_module_addrinfo) X(dwfl_module_build_id) X(dwfl_module_getdwarf)      \
	X(dwfl_module_getsrc) X(dwfl_module_getsymtab) X(dwfl_module_info) X(dwfl_offline_section_address)  \
	X(dwfl_report_begin) X(dwfl_report_elf) X(dwfl_report_end) X(dwfl_standard_find_debuginfo)         \
	X(dwfl_version)
#define TPROF_DWLIB_ELF(X)                                                                                 \
	X(elf_begin) X(elf_end) X(elf_getdata) X(elf_nextscn) X(elf_strptr) X(elf_version) X(gelf_getdyn)   \
	X(gelf_getshdr)

struct tprof_dwlib {
#define TPROF_DWLIB_FIELD(f) __typeof__(f) *f;
	TPROF_DWLIB_DW(TPROF_DWLIB_FIELD)
	TPROF_DWLIB_ELF(TPROF_DWLIB_FIELD)
#undef TPROF_DWLIB_FIELD
	__typeof__(__cxa_demangle) *cxa_demangle; /* NULL without libstdc++: names stay mangled */
};
extern struct tprof_dwlib tprof_dwlib;

/* Loads the libraries once (thread-safe): 0, or -1 with *why saying what is missing (the same on
 * every later call). */
int tprof_dwlib_load(const char **why);

#ifndef TPROF_DWLIB_IMPL
#define dwarf_attr (tprof_dwlib.dwarf_attr)
#define dwarf_attr_integrate (tprof_dwlib.dwarf_attr_integrate)
#define dwarf_child (tprof_dwlib.dwarf_child)
#define dwarf_diecu (tprof_dwlib.dwarf_diecu)
#define dwarf_diename (tprof_dwlib.dwarf_diename)
#define dwarf_filesrc (tprof_dwlib.dwarf_filesrc)
#define dwarf_formref_die (tprof_dwlib.dwarf_formref_die)
#define dwarf_formstring (tprof_dwlib.dwarf_formstring)
#define dwarf_formudata (tprof_dwlib.dwarf_formudata)
#define dwarf_getscopes (tprof_dwlib.dwarf_getscopes)
#define dwarf_getsrcfiles (tprof_dwlib.dwarf_getsrcfiles)
#define dwarf_haspc (tprof_dwlib.dwarf_haspc)
#define dwarf_ranges (tprof_dwlib.dwarf_ranges)
#define dwarf_siblingof (tprof_dwlib.dwarf_siblingof)
#define dwarf_srclang (tprof_dwlib.dwarf_srclang)
#define dwarf_tag (tprof_dwlib.dwarf_tag)
#define dwfl_begin (tprof_dwlib.dwfl_begin)
#define dwfl_build_id_find_elf (tprof_dwlib.dwfl_build_id_find_elf)
#define dwfl_end (tprof_dwlib.dwfl_end)
#define dwfl_lineinfo (tprof_dwlib.dwfl_lineinfo)
#define dwfl_module_addrdie (tprof_dwlib.dwfl_module_addrdie)
#define dwfl_module_addrinfo (tprof_dwlib.dwfl_module_addrinfo)
#define dwfl_module_build_id (tprof_dwlib.dwfl_module_build_id)
#define dwfl_module_getdwarf (tprof_dwlib.dwfl_module_getdwarf)
#define dwfl_module_getsrc (tprof_dwlib.dwfl_module_getsrc)
#define dwfl_module_getsymtab (tprof_dwlib.dwfl_module_getsymtab)
#define dwfl_module_info (tprof_dwlib.dwfl_module_info)
#define dwfl_offline_section_address (tprof_dwlib.dwfl_offline_section_address)
#define dwfl_report_begin (tprof_dwlib.dwfl_report_begin)
#define dwfl_report_elf (tprof_dwlib.dwfl_report_elf)
#define dwfl_report_end (tprof_dwlib.dwfl_report_end)
#define dwfl_standard_find_debuginfo (tprof_dwlib.dwfl_standard_find_debuginfo)
#define dwfl_version (tprof_dwlib.dwfl_version)
#define elf_begin (tprof_dwlib.elf_begin)
#define elf_end (tprof_dwlib.elf_end)
#define elf_getdata (tprof_dwlib.elf_getdata)
#define elf_nextscn (tprof_dwlib.elf_nextscn)
#define elf_strptr (tprof_dwlib.elf_strptr)
#define elf_version (tprof_dwlib.elf_version)
#define gelf_getdyn (tprof_dwlib.gelf_getdyn)
#define gelf_getshdr (tprof_dwlib.gelf_getshdr)
#endif

#endif
