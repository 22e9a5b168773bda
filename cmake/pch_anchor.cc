// The translation unit that the precompiled headers of cmake/pch.cmake are built with.
