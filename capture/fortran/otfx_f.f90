! otfx_f — the otfx.h manual API for Fortran (link with -lotfx-capture):
!
!   use otfx_f
!   call otfx_region_begin('solve')
!   call otfx_region_end('solve')
!   call otfx_phase('checkpoint')
!   call otfx_trigger('diverged')
!
! Trailing blanks of the name are dropped; the C functions get a NUL-terminated copy.
module otfx_f
  use, intrinsic :: iso_c_binding, only: c_char, c_null_char
  implicit none
  private
  public :: otfx_region_begin, otfx_region_end, otfx_phase, otfx_trigger

  interface
    subroutine c_region_begin(name) bind(C, name='otfx_region_begin')
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine c_region_begin
    subroutine c_region_end(name) bind(C, name='otfx_region_end')
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine c_region_end
    subroutine c_phase(name) bind(C, name='otfx_phase')
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine c_phase
    subroutine c_trigger(name) bind(C, name='otfx_trigger')
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine c_trigger
  end interface

contains

  subroutine otfx_region_begin(name)
    character(len=*), intent(in) :: name
    call c_region_begin(trim(name) // c_null_char)
  end subroutine otfx_region_begin

  subroutine otfx_region_end(name)
    character(len=*), intent(in) :: name
    call c_region_end(trim(name) // c_null_char)
  end subroutine otfx_region_end

  subroutine otfx_phase(name)
    character(len=*), intent(in) :: name
    call c_phase(trim(name) // c_null_char)
  end subroutine otfx_phase

  subroutine otfx_trigger(name)
    character(len=*), intent(in) :: name
    call c_trigger(trim(name) // c_null_char)
  end subroutine otfx_trigger

end module otfx_f
