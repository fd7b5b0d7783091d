# The dependency rules between dtbench's libraries (DESIGN.md, "Layers"), enforced at configure time: a
# library must not link, directly or through another library, one it must not know. Include-level rules
# are checked by tests/layering.py (CTest `layering`).
#
# dtbench_forbid_links(TARGET FORBIDDEN...) records a rule; dtbench_check_links() checks them all once every
# target exists (end of the top-level CMakeLists.txt) and stops the configure step on a violation.

set_property(GLOBAL PROPERTY DTBENCH_LINK_RULES "")

function(dtbench_forbid_links target)
  foreach(forbidden IN LISTS ARGN)
    set_property(GLOBAL APPEND PROPERTY DTBENCH_LINK_RULES "${target}|${forbidden}")
  endforeach()
endfunction()

# All libraries `target` links, transitively (plain target names; generator expressions are skipped).
function(_dtbench_link_closure target out)
  set(seen "")
  set(todo "${target}")
  while(todo)
    list(POP_FRONT todo t)
    if(NOT TARGET "${t}" OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${t}")
    get_target_property(aliased "${t}" ALIASED_TARGET)
    if(aliased)
      list(APPEND todo "${aliased}")
      continue()
    endif()
    foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(libs "${t}" ${prop})
      if(libs)
        foreach(l IN LISTS libs)
          if(NOT l MATCHES "^\\$<")
            list(APPEND todo "${l}")
          endif()
        endforeach()
      endif()
    endforeach()
  endwhile()
  list(REMOVE_ITEM seen "${target}")
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

function(dtbench_check_links)
  get_property(rules GLOBAL PROPERTY DTBENCH_LINK_RULES)
  set(errors "")
  foreach(rule IN LISTS rules)
    string(REPLACE "|" ";" pair "${rule}")
    list(GET pair 0 target)
    list(GET pair 1 forbidden)
    if(NOT TARGET "${target}" OR NOT TARGET "${forbidden}")
      continue()  # e.g. the GPU libraries in a build without CUDA
    endif()
    _dtbench_link_closure("${target}" closure)
    if(forbidden IN_LIST closure)
      string(APPEND errors "\n  ${target} links ${forbidden}, which it must not know")
    endif()
  endforeach()
  if(errors)
    message(FATAL_ERROR "dtbench layering (DESIGN.md, Layers):${errors}")
  endif()
endfunction()
